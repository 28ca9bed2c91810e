"""The README's API quick start in a git checkout leaves no untracked
file: SQLite's write-ahead log and shared memory while the API runs are
ignored, and no lock file is left once db sync and the API are done."""

import shutil
import subprocess
import urllib.request
from pathlib import Path

from tests.functional.processes import console_script
from tests.functional.rpc_harness import wait_for_log

ROOT = Path(__file__).resolve().parents[2]
NOAUTH = "examples/api/noauth.conf"


def _git(checkout: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(checkout), *args], check=True,
                          capture_output=True, text=True).stdout


def _untracked(checkout: Path) -> str:
    return _git(checkout, "status", "--porcelain", "--untracked-files=all")


def test_api_quick_start_leaves_no_untracked_file(tmp_path):
    checkout = tmp_path / "clone"
    (checkout / "examples/api").mkdir(parents=True)
    shutil.copy(ROOT / ".gitignore", checkout)
    shutil.copy(ROOT / NOAUTH, checkout / NOAUTH)
    # Any free port: 8795 may be taken on a shared test machine.
    (checkout / "port.conf").write_text("[api]\nport = 0\n")
    _git(checkout, "init", "-q")
    _git(checkout, "add", ".")
    _git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit",
         "-qm", "clone")
    config = ["--config-file", NOAUTH, "--config-file", "port.conf"]
    subprocess.run([console_script("scheduler-manage"), *config, "db",
                    "sync"], cwd=checkout, check=True, capture_output=True)
    log = tmp_path / "api.log"
    with open(log, "wb") as stderr:
        api = subprocess.Popen([console_script("scheduler-api"), *config],
                               cwd=checkout, stderr=stderr,
                               stdout=subprocess.DEVNULL)
    try:
        text = wait_for_log(log.read_text, r"listening on http://\S+",
                            process=api)
        url = text.split("listening on ")[1].split()[0]
        with urllib.request.urlopen(f"{url}/v1/schedulingpolicyunits",
                                    timeout=10) as response:
            assert response.status == 200
        assert _untracked(checkout) == ""
    finally:
        api.terminate()
        api.wait(timeout=15)
    assert _untracked(checkout) == ""
    assert not list(checkout.glob("*.lock")), list(checkout.iterdir())
