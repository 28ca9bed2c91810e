// Clusters: each cluster's scheduling policy, parameter overrides and
// migration settings; a cluster the caller may attach to (GET
// /v1/access) gets a form that PUTs with If-Match.
import {call, get} from "./api.js";
import {clearErrors, el, showError} from "./dom.js";

const METHODS = ["auto", "hypervisor_default", "custom"];

function overridesText(properties) {
  return Object.entries(properties).map(([k, v]) => `${k}=${v}`).join("\n");
}

// "HighUtilization=70" lines to {HighUtilization: 70}; a value that is
// not a number is sent as typed, for the API to name.
function overrides(text) {
  const found = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const [key, ...rest] = line.split("=");
    const value = rest.join("=").trim();
    found[key.trim()] = /^-?\d+$/.test(value) ? Number(value) : value;
  }
  return found;
}

function editForm(cluster, policies, migrations, onSaved, onConflict) {
  const form = el("form", {class: "cluster-form", "data-cluster": cluster.name, novalidate: true},
    el("label", {}, "Policy ", el("select", {name: "policy", "data-field": "scheduling_policy"},
      el("option", {value: "", text: "(none)"}),
      ...policies.map((p) => el("option", {value: p.id, text: p.name, selected: p.id === cluster.scheduling_policy?.id})))),
    el("label", {}, "Overrides (NAME=VALUE a line) ", el("textarea", {name: "properties", rows: 2, "data-field": "properties"},
      overridesText(cluster.properties))),
    el("label", {}, "Migration policy ", el("select", {name: "migration", "data-field": "migration.policy"},
      ...migrations.map((m) => el("option", {value: m.id, text: m.id, selected: m.id === cluster.migration.policy.id})))),
    el("label", {}, "Bandwidth ", el("select", {name: "method", "data-field": "migration.bandwidth.assignment_method"},
      ...METHODS.map((m) => el("option", {value: m, text: m, selected: m === cluster.migration.bandwidth.assignment_method})))),
    el("label", {}, "Mbps ", el("input", {name: "custom", type: "number", min: 1, "data-field": "migration.bandwidth.custom_value",
      value: cluster.migration.bandwidth.custom_value ?? ""})),
    el("button", {type: "submit", text: "Save"}));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const f = form.elements;
    const body = {
      scheduling_policy: f.policy.value ? {id: f.policy.value} : null,
      properties: overrides(f.properties.value),
      migration: {policy: {id: f.migration.value}, bandwidth: {
        assignment_method: f.method.value, custom_value: f.custom.value === "" ? null : Number(f.custom.value)}},
    };
    try {
      await call("PUT", `/v1/clusters/${encodeURIComponent(cluster.name)}`, body,
        {"If-Match": form.dataset.etag});
      onSaved();
    } catch (error) {
      if (error.status === 412) onConflict(form);
      else showError(form, error);
    }
  });
  return form;
}

export async function render(main, access) {
  const [clusters, policies, migrations, fresh] = await Promise.all([
    get("/v1/clusters"), get("/v1/schedulingpolicies"), get("/v1/migrationpolicies"), get("/v1/access")]);
  const mayAttach = new Set(fresh.data.attach_clusters);
  const reload = () => { main.replaceChildren(); render(main, access); };
  const onConflict = (form) => {
    const banner = el("div", {class: "conflict", role: "alert"},
      "This cluster was changed by someone else since you opened it. ",
      el("button", {type: "button", text: "Reload", onclick: reload}));
    form.prepend(banner);
    banner.scrollIntoView({block: "center"});
  };
  main.append(el("h2", {text: "Clusters"}));
  for (const cluster of clusters.data.clusters) {
    const section = el("section", {class: "cluster-card", "data-cluster": cluster.name},
      el("h3", {text: cluster.name}),
      el("p", {}, `Policy: ${cluster.scheduling_policy?.name ?? "none"}; overrides: `
        + `${overridesText(cluster.properties).replaceAll("\n", ", ") || "none"}; migration: `
        + `${cluster.migration.policy.id}, bandwidth ${cluster.migration.bandwidth.assignment_method}`));
    if (mayAttach.has(cluster.name)) {
      const form = editForm(cluster, policies.data.schedulingpolicies, migrations.data.migrationpolicies, reload, onConflict);
      // The version this form shows: a save checks it is still current.
      form.dataset.etag = (await get(`/v1/clusters/${encodeURIComponent(cluster.name)}`)).etag;
      section.append(form);
    }
    main.append(section);
  }
  if (!clusters.data.clusters.length) main.append(el("p", {text: "No cluster: no compute node has one and none is configured."}));
}
