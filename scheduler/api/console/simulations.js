// Simulations: a scheduler-manage simulate --format json report (and
// its --plot PNG) opened from disk, its runs side by side: one column
// per configuration, one row per figure, the best of each row marked.
// Nothing is uploaded: the files are read in the browser.
import {el, num} from "./dom.js";

// Figures where less is better; the others (placed) more is better.
const LOWER_IS_BETTER = new Set(["rejected", "hosts_used_peak", "hot_host_minutes", "vm_hot_minutes",
  "overload_core_minutes", "p95_host_cpu", "cpu_stddev_mean", "herd_max", "migrations"]);

function figures(runs) {
  return [...new Set(runs.flatMap((r) => Object.keys(r)))]
    .filter((k) => k !== "config" && runs.some((r) => typeof r[k] === "number"));
}

function compare(report) {
  const runs = report.runs ?? [];
  const rows = figures(runs).map((name) => {
    const values = runs.map((r) => r[name]);
    const best = LOWER_IS_BETTER.has(name) ? Math.min(...values) : name === "placed" ? Math.max(...values) : null;
    return el("tr", {"data-figure": name}, el("th", {text: name}),
      ...values.map((v) => el("td", {class: v === best && runs.length > 1 ? "best" : null, text: num(v, 3)})));
  });
  return el("div", {class: "scroll"},
    el("p", {text: `${runs.length} runs on ${report.hosts ?? "?"} hosts, seed ${report.seed ?? "?"}, `
      + `report interval ${report.report_interval ?? "?"} s`}),
    el("table", {class: "list", id: "runs"},
      el("tr", {}, el("th", {text: "figure"}), ...runs.map((r) => el("th", {text: r.config}))), ...rows));
}

export async function render(main) {
  const out = el("div", {class: "side-by-side"});
  const table = el("div");
  const picture = el("div");
  out.append(table, picture);
  const json = el("input", {type: "file", accept: "application/json,.json", name: "report"});
  const png = el("input", {type: "file", accept: "image/png", name: "plot"});
  json.addEventListener("change", async () => {
    try {
      table.replaceChildren(compare(JSON.parse(await json.files[0].text())));
    } catch (error) {
      table.replaceChildren(el("p", {class: "error", role: "alert", text: `not a simulate JSON report: ${error.message}`}));
    }
  });
  png.addEventListener("change", () => {
    picture.replaceChildren(el("img", {src: URL.createObjectURL(png.files[0]), alt: "simulate --plot"}));
  });
  main.append(el("h2", {text: "Simulations"}),
    el("p", {text: "Open the output of scheduler-manage simulate --format json --compare … --plot out.png."}),
    el("div", {class: "toolbar"}, el("label", {}, "Report (JSON) ", json), el("label", {}, "Plot (PNG) ", png)), out);
}
