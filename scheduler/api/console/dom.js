// Small DOM helpers shared by the pages: element building, escaping for
// the HTML strings the large tables are built from, and errors shown
// beside the field the API names.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"};

export function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

export function num(value, digits = 1) {
  if (value === null || value === undefined) return "–";
  return Number.isInteger(value) ? String(value) : value.toFixed(digits);
}

// Clears the errors a previous attempt left in ``form``.
export function clearErrors(form) {
  for (const old of form.querySelectorAll(".field-error")) old.remove();
  for (const bad of form.querySelectorAll(".invalid")) bad.classList.remove("invalid");
}

// Shows ``error`` (an ApiError) beside the element whose data-field is
// the field it names, else the closest enclosing field, else at the
// top of ``form``.
export function showError(form, error) {
  let field = error.field || "";
  let target = null;
  while (field && !target) {
    target = form.querySelector(`[data-field="${CSS.escape(field)}"]`);
    const shorter = field.replace(/(\.[^.[\]]*|\[\d+\])$/, "");
    if (shorter === field) break;
    field = shorter;
  }
  const note = el("span", {class: "field-error", role: "alert", text: error.message});
  if (target) {
    target.classList.add("invalid");
    target.after(note);
  } else {
    form.prepend(note);
  }
  return note;
}
