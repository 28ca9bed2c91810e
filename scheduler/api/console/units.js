// The policy editor's unit lists, as oVirt's dialog has them: enabled
// and disabled filters (enabled ones with first/last), enabled weights
// with their factor and disabled ones, the balancer and its
// properties. Each control's data-field is the path the API names in
// its 400s ("weights[1].factor"), so an error shows beside it.
import {el} from "./dom.js";

const POSITIONS = [["", "—"], ["first", "first"], ["last", "last"]];

function ofType(units, type) {
  return units.filter((u) => u.type === type && u.enabled).sort((a, b) => a.name.localeCompare(b.name));
}

function columns(title, enabled, disabled) {
  return el("fieldset", {class: "units"}, el("legend", {text: title}),
    el("div", {class: "columns"},
      el("div", {class: "enabled"}, el("h4", {text: "Enabled"}), ...enabled),
      el("div", {class: "disabled"}, el("h4", {text: "Disabled"}), ...disabled)));
}

function filters(draft, units, editable, redraw) {
  const on = draft.filters.map((entry, i) => el("div", {class: "unit", "data-unit": entry.unit, "data-field": `filters[${i}].unit`},
    el("span", {text: entry.unit}),
    el("select", {"aria-label": `${entry.unit} position`, "data-field": `filters[${i}].position`, disabled: !editable,
      onchange: (e) => { entry.position = e.target.value || null; }},
    ...POSITIONS.map(([v, t]) => el("option", {value: v, text: t, selected: (entry.position ?? "") === v}))),
    editable && el("button", {type: "button", text: "Disable", onclick: () => {
      draft.filters.splice(i, 1); redraw(); }})));
  const used = new Set(draft.filters.map((f) => f.unit));
  const off = ofType(units, "filter").filter((u) => !used.has(u.name)).map((u) => el("div", {class: "unit", "data-unit": u.name, title: u.description},
    el("span", {text: u.name}),
    editable && el("button", {type: "button", text: "Enable", onclick: () => {
      draft.filters.push({unit: u.name, position: null}); redraw(); }})));
  return columns("Filters", on, off);
}

function weights(draft, units, editable, redraw) {
  const on = draft.weights.map((entry, i) => el("div", {class: "unit", "data-unit": entry.unit, "data-field": `weights[${i}].unit`},
    el("span", {text: entry.unit}),
    el("label", {}, "factor ", el("input", {type: "number", step: 1, value: entry.factor, disabled: !editable,
      "aria-label": `${entry.unit} factor`, "data-field": `weights[${i}].factor`,
      // Sent as typed: the API refuses a factor that is not an integer, naming it.
      oninput: (e) => { entry.factor = e.target.value === "" ? null : Number(e.target.value); }})),
    editable && el("button", {type: "button", text: "Disable", onclick: () => {
      draft.weights.splice(i, 1); redraw(); }})));
  const used = new Set(draft.weights.map((w) => w.unit));
  const off = ofType(units, "weight").filter((u) => !used.has(u.name)).map((u) => el("div", {class: "unit", "data-unit": u.name, title: u.description},
    el("span", {text: u.name}),
    editable && el("button", {type: "button", text: "Enable", onclick: () => {
      draft.weights.push({unit: u.name, factor: 1}); redraw(); }})));
  return columns("Weights and factors", on, off);
}

function balancer(draft, units, editable, redraw) {
  const balancers = ofType(units, "load_balancing");
  const chosen = balancers.find((u) => u.name === draft.balance?.unit);
  const select = el("select", {name: "balance", "data-field": "balance.unit", disabled: !editable,
    onchange: (e) => { draft.balance = e.target.value ? {unit: e.target.value} : null; draft.properties = {}; redraw(); }},
  el("option", {value: "", text: "(none)"}),
  ...balancers.map((u) => el("option", {value: u.name, text: u.name, selected: u === chosen})));
  const props = (chosen?.properties ?? []).map((p) => el("label", {}, `${p.name} `, el("input", {
    type: "number", step: 1, name: `property-${p.name}`, value: draft.properties[p.name] ?? "",
    placeholder: `default ${p.default}`, min: p.minimum ?? undefined, max: p.maximum ?? undefined,
    disabled: !editable, "data-field": `properties.${p.name}`,
    oninput: (e) => {
      if (e.target.value === "") delete draft.properties[p.name];
      else draft.properties[p.name] = Number(e.target.value);
    }})));
  return el("fieldset", {}, el("legend", {text: "Load balancer and properties"}),
    el("label", {}, "Balancer ", select), el("div", {class: "properties", "data-field": "properties"}, ...props));
}

export function unitLists(draft, units, editable, redraw) {
  return [filters(draft, units, editable, redraw), weights(draft, units, editable, redraw),
    balancer(draft, units, editable, redraw)];
}
