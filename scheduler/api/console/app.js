// The console's shell: who is logged in (GET /v1/access), and one page
// per location hash. Each page module exports render(view, access),
// which may return a function that stops it (the fleet's refresh).
import {get} from "./api.js";
import {el} from "./dom.js";
import * as clusters from "./clusters.js";
import * as explain from "./explain.js";
import * as fleet from "./fleet.js";
import * as policies from "./policies.js";
import * as simulations from "./simulations.js";

const PAGES = {fleet, explain, policies, clusters, simulations};
let stop = null;
let access = null;
// Counts navigations: a page whose render ends after the user went
// elsewhere is stopped and dropped, never shown or left refreshing.
let navigation = 0;

async function show() {
  const seen = ++navigation;
  const name = location.hash.slice(1).split("/")[0] || "fleet";
  const page = PAGES[name] ?? fleet;
  if (stop) stop();
  stop = null;
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("current", link.getAttribute("href") === `#${name}`);
  }
  // Each page draws into a container of its own: one still loading
  // writes into its container, detached once the user navigated away.
  const view = el("div", {class: "view"});
  const main = document.getElementById("page");
  main.replaceChildren(view);
  main.dataset.page = name;
  let stopPage = null;
  try {
    stopPage = await page.render(view, access);
  } catch (error) {
    view.append(el("p", {class: "error", role: "alert", text: error.message}));
  }
  if (seen === navigation) stop = stopPage ?? null;
  else if (stopPage) stopPage();
}

async function start() {
  try {
    access = (await get("/v1/access")).data;
  } catch (error) {
    document.getElementById("page").replaceChildren(
      el("p", {class: "error", role: "alert", text: error.message}));
    return;
  }
  document.getElementById("whoami").textContent =
    `${access.user} (${access.roles.join(", ") || "no role"})`;
  window.addEventListener("hashchange", show);
  await show();
}

start();
