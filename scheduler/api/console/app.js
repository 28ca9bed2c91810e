// The console's shell: who is logged in (GET /v1/access), and one page
// per location hash. Each page module exports render(main, access),
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

async function show() {
  const name = location.hash.slice(1).split("/")[0] || "fleet";
  const page = PAGES[name] ?? fleet;
  if (stop) stop();
  stop = null;
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("current", link.getAttribute("href") === `#${name}`);
  }
  const main = document.getElementById("page");
  main.replaceChildren();
  main.dataset.page = name;
  try {
    stop = await page.render(main, access);
  } catch (error) {
    main.append(el("p", {class: "error", role: "alert", text: error.message}));
  }
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
