// Policies: the list, creation from a built-in (based_on), and an
// editor as oVirt's dialog: enabled and disabled filters with
// first/last, weights with factors, the balancer and its properties.
// Saving sends If-Match: a policy someone else changed since it was
// opened is not overwritten (412), and the page offers a reload. What
// the caller may not do (GET /v1/access) is not offered.
import {call, get} from "./api.js";
import {clearErrors, el, showError} from "./dom.js";
import {unitLists} from "./units.js";

const NORMALIZATIONS = ["", "minmax", "rank", "hardmax", "none"];
// A policy id as the API makes them: anything else in the location
// hash is refused before it becomes part of a request path.
const POLICY_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const policyPath = (id) => `/v1/schedulingpolicies/${encodeURIComponent(id)}`;

async function list(main, access) {
  const policies = (await get("/v1/schedulingpolicies")).data.schedulingpolicies;
  const rows = policies.map((p) => el("tr", {"data-policy": p.name},
    el("td", {}, el("a", {href: `#policies/${encodeURIComponent(p.id)}`, text: p.name})),
    el("td", {text: p.locked ? "built-in (locked)" : "stored"}),
    el("td", {text: p.clusters.join(", ") || "–"}),
    el("td", {text: p.filters.map((f) => f.unit).join(", ")}),
    el("td", {text: p.weights.map((w) => `${w.unit} ×${w.factor}`).join(", ")}),
    el("td", {text: p.balance?.unit ?? "–"})));
  main.append(el("h2", {text: "Scheduling policies"}), el("table", {class: "list"},
    el("tr", {}, ...["name", "kind", "clusters", "filters", "weights", "balancer"].map((h) => el("th", {text: h}))),
    ...rows));
  if (access.may.create_policy) main.append(createForm(policies));
}

function createForm(policies) {
  const form = el("form", {id: "create-policy", class: "inline"},
    el("h3", {text: "New policy"}),
    el("label", {}, "Name ", el("input", {name: "name", required: true, "data-field": "name"})),
    el("label", {}, " based on ", el("select", {name: "based_on", "data-field": "based_on"},
      ...policies.map((p) => el("option", {value: p.id, text: p.name})))),
    el("button", {type: "submit", text: "Create"}));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    try {
      const created = await call("POST", "/v1/schedulingpolicies",
        {name: form.elements.name.value, based_on: form.elements.based_on.value});
      location.hash = `#policies/${encodeURIComponent(created.data.id)}`;
    } catch (error) {
      showError(form, error);
    }
  });
  return form;
}

// The editable state of a policy, as a PUT takes it back.
function draftOf(policy) {
  return {
    name: policy.name, description: policy.description, normalization: policy.normalization,
    filters: policy.filters.map((f) => ({unit: f.unit, position: f.position})),
    weights: policy.weights.map((w) => ({unit: w.unit, factor: w.factor})),
    balance: policy.balance ? {unit: policy.balance.unit} : null,
    properties: {...policy.properties},
  };
}

function header(draft, editable) {
  const text = (label, key) => el("label", {}, label, el("input", {
    name: key, value: draft[key] ?? "", "data-field": key, disabled: !editable,
    oninput: (e) => { draft[key] = e.target.value; }}));
  return el("fieldset", {}, el("legend", {text: "General"}), text("Name", "name"),
    text("Description", "description"),
    el("label", {}, "Normalization", el("select", {
      name: "normalization", "data-field": "normalization", disabled: !editable,
      onchange: (e) => { draft.normalization = e.target.value || null; }},
    ...NORMALIZATIONS.map((n) => el("option", {value: n, text: n || "(configured)", selected: (draft.normalization ?? "") === n})))));
}

async function editor(main, access, id) {
  const [{data: policy, etag}, {data: units}] = await Promise.all([
    get(policyPath(id)), get("/v1/schedulingpolicyunits")]);
  const editable = access.edit_policies.includes(policy.id);
  const deletable = access.delete_policies.includes(policy.id);
  const draft = draftOf(policy);
  const form = el("form", {id: "policy-editor", "data-editable": String(editable), novalidate: true});
  const redraw = () => form.replaceChildren(...body());
  function body() {
    const parts = [header(draft, editable), ...unitLists(draft, units.schedulingpolicyunits, editable, redraw)];
    if (editable) parts.push(el("button", {type: "submit", text: "Save"}));
    if (deletable) parts.push(el("button", {type: "button", class: "danger", text: "Delete", onclick: remove}));
    return parts;
  }
  const conflict = () => el("div", {class: "conflict", role: "alert"},
    "This policy was changed by someone else since you opened it. ",
    el("button", {type: "button", text: "Reload", onclick: () => { main.replaceChildren(); render(main); }}));
  function report(error) {
    const shown = error.status === 412 ? conflict() : showError(form, error);
    if (error.status === 412) form.prepend(shown);
    shown.scrollIntoView({block: "center"});
  }
  // PUT (the draft) or DELETE, with the ETag the page was opened at.
  async function send(method, sent) {
    clearErrors(form);
    try {
      await call(method, policyPath(id), sent, {"If-Match": etag});
      location.hash = "#policies";
    } catch (error) {
      report(error);
    }
  }
  const remove = () => send("DELETE");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    send("PUT", draft);
  });
  redraw();
  const note = policy.locked ? "Built-in: read-only; create a copy from the list to change it."
    : editable ? `Version ${policy.version}; clusters: ${policy.clusters.join(", ") || "none"}.`
      : "Read-only: your role may not edit this policy.";
  main.append(el("p", {}, el("a", {href: "#policies", text: "← all policies"})),
    el("h2", {text: `Policy ${policy.name}`}), el("p", {class: "note", text: note}), form);
}

export async function render(main) {
  // Asked afresh: creating a policy makes its creator able to edit it.
  const access = (await get("/v1/access")).data;
  const part = location.hash.split("/")[1];
  if (!part) return list(main, access);
  let id = null;
  try {
    id = decodeURIComponent(part);
  } catch {
    // A malformed %-escape: refused below as any other non-id.
  }
  if (!POLICY_ID.test(id ?? "")) {
    main.append(el("p", {class: "error", role: "alert", text: "No such policy: the address does not hold a policy id."}),
      el("p", {}, el("a", {href: "#policies", text: "← all policies"})));
    return undefined;
  }
  return editor(main, access, id);
}
