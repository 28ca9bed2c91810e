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

// One kind of unit as two columns: the enabled ones in order, each with
// ``controls(entry, i)`` and a Disable button, and the disabled ones,
// each with an Enable button appending ``fresh(name)``.
function kind(title, type, key, draft, units, editable, redraw, controls, fresh) {
  const list = draft[key];
  const on = list.map((entry, i) => el("div", {class: "unit", "data-unit": entry.unit, "data-field": `${key}[${i}].unit`},
    el("span", {text: entry.unit}), controls(entry, i),
    editable && el("button", {type: "button", text: "Disable", onclick: () => { list.splice(i, 1); redraw(); }})));
  const used = new Set(list.map((entry) => entry.unit));
  const off = ofType(units, type).filter((u) => !used.has(u.name)).map((u) => el("div", {class: "unit", "data-unit": u.name, title: u.description},
    el("span", {text: u.name}),
    editable && el("button", {type: "button", text: "Enable", onclick: () => { list.push(fresh(u.name)); redraw(); }})));
  return el("fieldset", {class: "units"}, el("legend", {text: title}),
    el("div", {class: "columns"},
      el("div", {class: "enabled"}, el("h4", {text: "Enabled"}), ...on),
      el("div", {class: "disabled"}, el("h4", {text: "Disabled"}), ...off)));
}

function filters(draft, units, editable, redraw) {
  const position = (entry, i) => el("select", {"aria-label": `${entry.unit} position`, "data-field": `filters[${i}].position`,
    disabled: !editable, onchange: (e) => { entry.position = e.target.value || null; }},
  ...POSITIONS.map(([v, t]) => el("option", {value: v, text: t, selected: (entry.position ?? "") === v})));
  return kind("Filters", "filter", "filters", draft, units, editable, redraw, position,
    (name) => ({unit: name, position: null}));
}

function weights(draft, units, editable, redraw) {
  const factor = (entry, i) => el("label", {}, "factor ", el("input", {type: "number", step: 1, value: entry.factor,
    disabled: !editable, "aria-label": `${entry.unit} factor`, "data-field": `weights[${i}].factor`,
    // Sent as typed: the API refuses a factor that is not an integer, naming it.
    oninput: (e) => { entry.factor = e.target.value === "" ? null : Number(e.target.value); }}));
  return kind("Weights and factors", "weight", "weights", draft, units, editable, redraw, factor,
    (name) => ({unit: name, factor: 1}));
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
