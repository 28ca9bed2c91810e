"""The web console in a real headless Chromium against a real
scheduler-api on PostgreSQL, logged in as admin, cluster_admin and
reader: the fleet, an explain (the same choice as scheduler-manage
explain), a policy edited in the browser changing the next decision, a
stale edit's conflict, and a reader offered no edit."""

import json

import pytest
import sqlalchemy as sa

from scheduler.db import models
from tests.functional import api_server
from tests.functional.console_browser import KINDS
from tests.functional.console_browser import launch
from tests.functional.console_browser import open_console
from tests.functional.console_browser import screenshot
from tests.functional.console_browser import write_fleet
from tests.functional.processes import run_manage

SPREAD = {"name": "spread", "filters": [{"unit": "ComputeFilter"},
                                        {"unit": "RamFilter"}],
          "weights": [{"unit": "RAMWeigher", "factor": 1}]}


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module's tests (their pages each
    have a context of their own)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = launch(playwright)
        yield launched
        launched.close()


@pytest.fixture
def console(postgresql_url, tmp_path, write_config, start_console_script):
    """(api, config file, host names): scheduler-api with the rule
    matrix's users on a PostgreSQL database holding the test fleet."""
    api_server.sync(postgresql_url)
    api_server.grant_matrix_permissions(postgresql_url)
    names = write_fleet(postgresql_url)
    api = api_server.start(tmp_path, write_config, start_console_script,
                           postgresql_url)
    config = write_config({"database": {"connection": postgresql_url}},
                          name="manage.conf")
    return api, config, names


def _cli_choice(run_console_script, config, *args: str) -> dict:
    result = run_manage(run_console_script, config, "explain", *args,
                        "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _explain_in_browser(page, cluster: str, ram_mb: int) -> tuple[str, str]:
    """(chosen host, policy) the Explain page shows."""
    page.goto("/ui/#explain")
    page.select_option("select[name=cluster]", cluster)
    page.fill("input[name=memory_mb]", str(ram_mb))
    page.click("form.explain-form button[type=submit]")
    page.wait_for_selector("#decision")
    return (page.inner_text("#decision .chosen"),
            page.inner_text("#decision .policy"))


def _disable(url: str, host: str) -> None:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    table = models.ComputeNode.__table__
    try:
        with engine.begin() as connection:
            connection.execute(table.update().where(table.c.host == host)
                               .values(disabled=True,
                                       changed_at=models.utcnow()))
    finally:
        engine.dispose()


def _fleet_shows_every_host(page, api, names: list[str]) -> None:
    """Each host's tile has its metrics as GET /v1/hosts gives them, the
    last one's stale; the clusters in order; a host's detail panel."""
    page.wait_for_selector(".tile")
    assert page.locator(".tile").count() == len(names)
    hosts = {h["host"]: h for h in api.get("/v1/hosts").body["hosts"]}
    assert set(hosts) == set(names)
    for name in names:
        text = page.locator(f'.tile[data-host="{name}"]').inner_text()
        cpu = round(hosts[name]["cpu_percent"])
        assert f"cpu {cpu}%" in text
        assert f"{hosts[name]['vcpus_free']:g} vCPU" in text
    assert "(stale)" in page.locator(f'.tile[data-host="{names[-1]}"]'
                                     ).inner_text()
    assert "(stale)" not in page.locator(f'.tile[data-host="{names[0]}"]'
                                         ).inner_text()
    clusters = page.locator("section.cluster h3").all_inner_texts()
    assert [c.split()[0] for c in clusters] == ["c1", "c2", "c3"]
    screenshot(page, "fleet")
    # A host in full: every metric, from GET /v1/hosts/{name}.
    page.click(f'.tile[data-host="{names[-1]}"]')
    panel = page.wait_for_selector("#host-detail .metrics")
    shown = {row.get_attribute("data-metric")
             for row in panel.query_selector_all("tr[data-metric]")}
    assert shown >= {"cpu.percent", "memory.percent"}
    assert "(stale)" in page.inner_text("#host-detail")
    screenshot(page, "host")


def test_admin_fleet_and_explain_as_the_cli(browser, console,
                                            run_console_script,
                                            postgresql_url):
    api, config, names = console
    page = open_console(browser, api, "admin", "fleet", fake_clock=True)
    _fleet_shows_every_host(page, api, names)
    page.click("#host-detail .close")
    # The page refreshes itself: a node disabled now shows so.
    _disable(postgresql_url, names[0])
    page.clock.run_for(11_000)
    page.wait_for_selector(f'.tile.disabled[data-host="{names[0]}"]')

    chosen, policy = _explain_in_browser(page, "c2", 4096)
    cli = _cli_choice(run_console_script, config, "--ram", "4096",
                      "--cluster", "c2")
    assert chosen == cli["selected"][0]
    assert policy.startswith("none") and cli["policy"] is None
    # Every host, those of other clusters with the filter that removed
    # them, as the command lists them.
    assert page.locator("table.explain tr[data-host]").count() == len(names)
    kept = page.locator("table.explain tr[data-host]:not(.filtered)")
    assert kept.count() == sum(1 for cluster, _ in KINDS if cluster == "c2")
    assert kept.count() == sum(1 for h in cli["hosts"]
                               if h["filtered_by"] is None)
    screenshot(page, "explain")

    # Nothing fits: the NoValidHost histogram.
    page.fill("input[name=memory_mb]", "999999")
    page.click("form.explain-form button[type=submit]")
    page.wait_for_selector("#decision .histogram")
    assert "RamFilter" in page.inner_text("#decision .histogram")
    # A field the API refuses is named beside it.
    page.fill("input[name=vcpus]", "-1")
    page.click("form.explain-form button[type=submit]")
    error = page.wait_for_selector(".field-error")
    assert "vcpus" in error.inner_text()
    assert page.locator("input[name=vcpus].invalid").count() == 1


def test_cluster_admin_edits_a_policy_and_the_decision_follows(
        browser, console, run_console_script):
    api, config, _ = console
    created = api.call("POST", "/v1/schedulingpolicies", SPREAD)
    assert created.status == 201
    page = open_console(browser, api, "ca_c1", "policies")
    # A copy of a built-in, which its creator may edit.
    page.fill("#create-policy input[name=name]", "mine")
    page.select_option("#create-policy select[name=based_on]",
                       label="power_saving")
    page.click("#create-policy button[type=submit]")
    page.wait_for_selector("#policy-editor[data-editable=true]")
    mine = [p for p in api.get("/v1/schedulingpolicies").body[
        "schedulingpolicies"] if p["name"] == "mine"]
    assert len(mine) == 1 and not mine[0]["locked"]
    page.goto("/ui/#clusters")
    # cluster_admin of c1 alone: only c1 is offered.
    page.wait_for_selector("section.cluster-card")
    assert page.locator('form.cluster-form[data-cluster="c1"]').count() == 1
    assert page.locator('form.cluster-form[data-cluster="c2"]').count() == 0
    form = page.locator('form.cluster-form[data-cluster="c1"]')
    form.locator("select[name=policy]").select_option(label="spread")
    form.locator("button[type=submit]").click()
    page.wait_for_selector('section[data-cluster="c1"] >> text=Policy: spread')
    screenshot(page, "clusters")

    before, policy = _explain_in_browser(page, "c1", 4096)
    assert policy.startswith("spread")
    assert before == _cli_choice(run_console_script, config, "--ram", "4096",
                                 "--cluster", "c1")["selected"][0]

    page.goto("/ui/#policies")
    page.click("text=spread")
    page.wait_for_selector("#policy-editor[data-editable=true]")
    factor = page.locator('input[data-field="weights[0].factor"]')
    # A factor the API refuses: its error beside the field.
    factor.fill("1.5")
    page.click("#policy-editor button[type=submit]")
    error = page.wait_for_selector("#policy-editor .field-error")
    assert error.inner_text().startswith("weights[0].factor")
    screenshot(page, "policy-editor")
    factor.fill("-1")
    page.click("#policy-editor button[type=submit]")
    page.wait_for_selector("table.list")

    after, policy = _explain_in_browser(page, "c1", 4096)
    cli = _cli_choice(run_console_script, config, "--ram", "4096",
                      "--cluster", "c1")
    assert after == cli["selected"][0] and after != before
    assert cli["policy"].startswith("spread")


def test_a_stale_edit_shows_the_conflict(browser, console):
    api, _, _ = console
    policy = api.call("POST", "/v1/schedulingpolicies", SPREAD).body
    page = open_console(browser, api, "admin", f"policies/{policy['id']}")
    page.wait_for_selector("#policy-editor[data-editable=true]")
    # Someone else saves first.
    changed = api.call("PUT", f"/v1/schedulingpolicies/{policy['id']}",
                       {"description": "changed elsewhere"})
    assert changed.status == 200
    page.fill('input[data-field="weights[0].factor"]', "3")
    page.click("#policy-editor button[type=submit]")
    conflict = page.wait_for_selector(".conflict")
    assert "changed by someone else" in conflict.inner_text()
    screenshot(page, "conflict")
    assert api.get(f"/v1/schedulingpolicies/{policy['id']}").body[
        "weights"][0]["factor"] == 1
    page.click(".conflict button")
    page.wait_for_selector('input[name=description][value="changed '
                           'elsewhere"]')
    # Reloaded: the current version, which a delete may remove.
    page.click("#policy-editor button.danger")
    page.wait_for_selector("table.list")
    assert api.get(f"/v1/schedulingpolicies/{policy['id']}").status == 404
    # A cluster, likewise.
    page.goto("/ui/#clusters")
    form = page.locator('form.cluster-form[data-cluster="c2"]')
    form.wait_for()
    assert api.call("PUT", "/v1/clusters/c2", {
        "properties": {}}).status == 200
    form.locator("select[name=method]").select_option("custom")
    form.locator("input[name=custom]").fill("500")
    form.locator("button[type=submit]").click()
    assert "changed by someone else" in form.locator(".conflict").inner_text()
    assert api.get("/v1/clusters/c2").body["migration"]["bandwidth"][
        "assignment_method"] == "auto"


def test_reader_is_offered_no_edit(browser, console):
    api, _, names = console
    policy = api.call("POST", "/v1/schedulingpolicies", SPREAD).body
    page = open_console(browser, api, "reader", "fleet")
    page.wait_for_selector(".tile")
    assert page.locator(".tile").count() == len(names)
    page.goto("/ui/#policies")
    page.wait_for_selector("table.list")
    assert page.locator("#create-policy").count() == 0
    screenshot(page, "policies")
    page.goto(f"/ui/#policies/{policy['id']}")
    page.wait_for_selector("#policy-editor[data-editable=false]")
    editor = page.locator("#policy-editor")
    assert editor.locator("button").count() == 0
    assert editor.locator("input:not([disabled]), select:not([disabled])"
                          ).count() == 0
    page.goto("/ui/#clusters")
    page.wait_for_selector("section.cluster-card")
    assert page.locator("form.cluster-form").count() == 0
    # The server refuses what is not offered.
    status = page.evaluate(
        """async (id) => (await fetch(`/v1/schedulingpolicies/${id}`, {
            method: "DELETE"})).status""", policy["id"])
    assert status == 403
    assert api.get(f"/v1/schedulingpolicies/{policy['id']}").status == 200


def _hold(page, pattern: str) -> list:
    """Routes of requests to ``pattern``, held unanswered (as a slow
    server would) until the test continues them."""
    held = []
    page.route(pattern, lambda route: held.append(route))
    return held


def _settle(page) -> None:
    """A request of its own answered: the page has handled the answers
    that came before it, and the route handlers have run."""
    page.evaluate("async () => { await fetch('/v1/access'); }")


def test_a_page_left_while_loading_is_dropped(browser, console):
    api, _, _ = console
    page = open_console(browser, api, "reader", "explain", fake_clock=True)
    page.wait_for_selector("form.explain-form")
    polls = []
    page.on("request", lambda r: polls.append(r.url)
            if r.url.endswith("/v1/hosts") else None)
    hosts = _hold(page, "**/v1/hosts")
    listing = _hold(page, "**/v1/schedulingpolicies")
    # The fleet and then the policies asked for, each left before its
    # answer came: the explain page is where the user is.
    page.evaluate("location.hash = '#fleet'")
    page.wait_for_selector("h2 >> text=Fleet")
    page.evaluate("location.hash = '#policies'")
    _settle(page)
    page.evaluate("location.hash = '#explain'")
    page.wait_for_selector("form.explain-form")
    assert len(hosts) == len(listing) == 1
    for held, pattern in ((hosts, "**/v1/hosts"),
                          (listing, "**/v1/schedulingpolicies")):
        with page.expect_response(pattern):
            held[0].continue_()
    _settle(page)
    page.unroute("**/v1/hosts")
    # Neither late page shows, and the fleet's refresh never started.
    assert page.locator("#page h2").all_inner_texts() == [
        "Explain a decision"]
    assert page.locator("#page .tile, #page table.list").count() == 0
    page.clock.run_for(30_000)
    _settle(page)
    assert len(polls) == 1
    # An address that is no policy id asks the API nothing.
    asked = []
    page.on("request", lambda r: asked.append(r.url)
            if "/v1/schedulingpolicies/" in r.url else None)
    page.evaluate("location.hash = '#policies/..%2F..%2Fpermissions'")
    assert "No such policy" in page.wait_for_selector(".error").inner_text()
    _settle(page)
    assert asked == []


def test_endpoints_and_files_over_http(console, run_console_script):
    api, config, names = console
    # The endpoints the pages call, over HTTP.
    shown = api.get(f"/v1/hosts/{names[0]}", user="reader")
    assert shown.status == 200 and shown.body["host"] == names[0]
    assert {m["name"] for m in shown.body["metrics"]} >= {"cpu.percent",
                                                          "memory.percent"}
    assert api.get("/v1/hosts/nope", user="reader").status == 404
    request = {"flavor": {"vcpus": 2, "memory_mb": 2048, "root_gb": 10},
               "cluster": "c1"}
    explained = api.call("POST", "/v1/explain", request, user="reader")
    cli = _cli_choice(run_console_script, config, "--vcpus", "2", "--ram",
                      "2048", "--disk", "10", "--cluster", "c1")
    assert explained.body["selected"] == cli["selected"]
    assert [(h["host"], h["filtered_by"]) for h in explained.body["hosts"]
            ] == [(h["host"], h["filtered_by"]) for h in cli["hosts"]]
    refused = api.call("POST", "/v1/explain", {"flavor": {}}, user="reader")
    assert refused.status == 400
    assert refused.message.startswith("request_spec.flavor.")
    assert api.call("POST", "/v1/explain", request,
                    user="nobody").status == 403
    assert api.get("/ui/", user=None).status == 401
    assert api.get("/ui/app.js", user="nobody").status == 403
    page = api.get("/ui/", user="reader")
    assert page.status == 200
    assert page.headers["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert api.get("/ui/nothing.js", user="reader").status == 404


def test_simulations_side_by_side(browser, console, run_console_script,
                                  write_config, tmp_path):
    api, _, _ = console
    nova = write_config({"filter_scheduler": {
        "weight_classes": "RAMWeigher"}}, name="nova.conf")
    balanced = write_config({"scheduler": {
        "default_policy": "evenly_distributed"}}, name="balanced.conf")
    report, plot = tmp_path / "report.json", tmp_path / "plot.png"
    result = run_console_script(
        "scheduler-manage", "simulate", "--synthetic", "150", "--seed", "3",
        "--hosts", "8", "--duration", "3600", "--compare", str(balanced),
        "--format", "json", "--plot", str(plot), config_file=nova,
        timeout=300)
    assert result.returncode == 0, result.stderr
    report.write_text(result.stdout)
    runs = json.loads(result.stdout)["runs"]
    page = open_console(browser, api, "reader", "simulations")
    page.set_input_files("input[name=report]", report)
    page.set_input_files("input[name=plot]", plot)
    page.wait_for_selector(".side-by-side img")
    assert page.locator("#runs tr:first-child th").all_inner_texts()[1:] == [
        "nova.conf", "balanced.conf"]
    placed = page.locator('#runs tr[data-figure="placed"] td')
    assert placed.all_inner_texts() == [str(r["placed"]) for r in runs]
    width = page.evaluate(
        "document.querySelector('.side-by-side img').naturalWidth")
    assert width > 0
    screenshot(page, "simulations")
