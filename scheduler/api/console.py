"""The web console under /ui/: plain HTML, CSS and
JavaScript modules shipped in ``scheduler/api/console/`` (no build
step, nothing fetched from the network), served behind the API's
authentication to any role that may read. The pages call the /v1 API
with the browser's credentials; what they offer follows GET
/v1/access.

The Content-Security-Policy allows only this server's own scripts and
styles: no inline script, no third-party origin.
"""

import functools
import hashlib
import pathlib

from scheduler.api import errors
from scheduler.api import rules
from scheduler.api.router import Context
from scheduler.api.router import Reply
from scheduler.api.router import Router

ASSETS = pathlib.Path(__file__).with_name("console")
TYPES = {".html": "text/html", ".js": "text/javascript",
         ".css": "text/css"}
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; "
        "connect-src 'self'; img-src 'self' blob:; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Revalidated each time (ETag): a new release is seen at once.
    "Cache-Control": "no-cache",
}


@functools.cache
def _files() -> dict[str, tuple[bytes, str, str]]:
    """name -> (content, content type, ETag): the console's files, read
    once; any other name is a 404."""
    found = {}
    for path in sorted(ASSETS.iterdir()):
        if path.suffix in TYPES:
            content = path.read_bytes()
            etag = '"' + hashlib.sha256(content).hexdigest()[:32] + '"'
            found[path.name] = (content, TYPES[path.suffix], etag)
    return found


def show_file(ctx: Context, name: str = "index.html") -> Reply:
    ctx.access.authorize(rules.READ)
    found = _files().get(name)
    if found is None:
        raise errors.not_found("console file", name)
    content, content_type, etag = found
    return Reply(content, etag=etag, headers=dict(HEADERS),
                 content_type=content_type)


def register(router: Router) -> None:
    router.add("/ui", "GET", show_file)
    router.add("/ui/{name}", "GET", show_file)
