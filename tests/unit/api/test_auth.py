"""scheduler-api's authentication in-process (http_basic, SQLite): the
identity headers a client sends are removed before authentication, so
that roles come only from the database's permissions."""

import base64
import json
import logging

import bcrypt
import pytest
import webob
from sqlalchemy.orm import Session

from scheduler.api import access
from scheduler.api import app as api_app
from scheduler.api import auth
from scheduler.api import keystone
from scheduler.conf import api as api_conf
from scheduler.db import api as db_api
from scheduler.db import permissions
from tests.unit.api.fakes import SPOOFED

PASSWORD = "pw"
USERS = ("rdr", "nobody", "root")

ALL_SPOOFED = dict(SPOOFED)


@pytest.fixture
def app(scheduler_config, tmp_path):
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    htpasswd = tmp_path / "htpasswd"
    htpasswd.write_text("".join(f"{user}:{digest}\n" for user in USERS))
    api_conf.register_library_opts(scheduler_config)
    scheduler_config.set_override("http_basic_auth_user_file", str(htpasswd),
                                  group="oslo_middleware")
    with Session(db_api.get_engine(scheduler_config)) as session, \
            session.begin():
        permissions.add(session, "rdr", "reader")
        permissions.add(session, "root", "admin")
    return api_app.make_app(scheduler_config)


def call(app, method: str, path: str, user: str | None,
         headers: dict | None = None, data: bytes | None = None):
    sent = dict(headers or {})
    if user is not None:
        token = base64.b64encode(f"{user}:{PASSWORD}".encode()).decode()
        sent["Authorization"] = f"Basic {token}"
    request = webob.Request.blank(path, method=method, headers=sent)
    if data is not None:
        request.content_type = "application/json"
        request.body = data
    return request.get_response(app)


def granted(app) -> list[dict]:
    return call(app, "GET", "/v1/permissions", "root").json["permissions"]


@pytest.mark.parametrize("user, read_status", [
    ("rdr", 403), ("nobody", 403), (None, 401)])
@pytest.mark.parametrize("header, value",
                         [*SPOOFED, ("(all at once)", None)])
def test_spoofed_identity_headers_change_nothing(app, user, read_status,
                                                 header, value):
    headers = ALL_SPOOFED if value is None else {header: value}
    before = granted(app)
    assert call(app, "GET", "/v1/permissions", user,
                headers).status_int == read_status
    grant = b'{"user": "rdr", "role": "admin"}'
    assert call(app, "POST", "/v1/permissions", user, headers,
                grant).status_int == read_status
    assert call(app, "PUT", "/v1/clusters/c1", user, headers,
                b'{"scheduling_policy": null}').status_int == read_status
    assert granted(app) == before


@pytest.mark.parametrize("header, value", SPOOFED)
def test_spoofed_headers_do_not_make_a_stranger_a_reader(app, header,
                                                         value):
    assert call(app, "GET", "/v1/clusters", "nobody",
                {header: value}).status_int == 403
    assert call(app, "GET", "/v1/clusters", "rdr",
                {header: value}).status_int == 200


def test_the_strip_is_logged_without_the_values(app, caplog):
    caplog.set_level(logging.WARNING, logger=auth.__name__)
    for _ in range(3):
        call(app, "GET", "/v1/clusters", "rdr", {"X-Roles": "admin" * 1000})
    # Once a minute at most: a flood of them cannot fill the log.
    [record] = [r for r in caplog.records if r.name == auth.__name__]
    assert "HTTP_X_ROLES" in record.getMessage()
    assert "admin" not in record.getMessage()


def test_credentials_are_kept():
    environ = {"HTTP_X_AUTH_TOKEN": "t", "HTTP_X_SERVICE_TOKEN": "s",
               "HTTP_X_ROLES": "admin", "HTTP_X_SERVICE_ROLES": "admin"}
    assert sorted(auth.owned_identity_keys(environ)) == [
        "HTTP_X_ROLES", "HTTP_X_SERVICE_ROLES"]


def test_a_verified_identity_is_what_access_reads(app, scheduler_config):
    with Session(db_api.get_engine(scheduler_config)) as session:
        enforcer = access.enforcer(scheduler_config)
        system_admin = access.Access.of({access.IDENTITY_KEY: access.Identity(
            "carol", roles=frozenset({"admin"}), system_all=True)},
            session, enforcer)
        project_admin = access.Access.of({
            access.IDENTITY_KEY: access.Identity(
                "carol", roles=frozenset({"admin"}))}, session, enforcer)
        header_admin = access.Access.of({
            "HTTP_X_USER_NAME": "root", "HTTP_X_ROLES": "admin",
            "HTTP_OPENSTACK_SYSTEM_SCOPE": "all"}, session, enforcer)
    assert system_admin.roles == {"admin"}
    assert project_admin.roles == set()
    assert header_admin.user is None and header_admin.roles == set()


def test_an_overlong_user_name_is_refused_unlogged(app, caplog):
    caplog.set_level(logging.INFO)
    name = "x" * 1_000_000
    token = base64.b64encode(f"{name}:pw".encode()).decode()
    request = webob.Request.blank("/v1/clusters", headers={
        "Authorization": f"Basic {token}"})
    assert request.get_response(app).status_int == 401
    assert max((len(r.getMessage()) for r in caplog.records),
               default=0) < 1000


def keystone_access(scheduler_config, user: str, domain_id: str,
                    domain_name: str) -> access.Access:
    with Session(db_api.get_engine(scheduler_config)) as session:
        return access.Access.of({access.IDENTITY_KEY: access.Identity(
            user, domain_id, domain_name)}, session,
            access.enforcer(scheduler_config))


def test_grants_match_the_users_domain_id(app, scheduler_config):
    with Session(db_api.get_engine(scheduler_config)) as session, \
            session.begin():
        permissions.add(session, "carol", "cluster_admin", "c1")
        permissions.add(session, "carol", "cluster_admin", "c2",
                        domain="d-sales")
        # The default domain's id is the same as no domain.
        permissions.add(session, "carol", "cluster_admin", "c3",
                        domain="default")
    default = keystone_access(scheduler_config, "carol", "default",
                              "Default")
    sales = keystone_access(scheduler_config, "carol", "d-sales", "Sales")
    # A domain named as another's id borrows nothing: names never match.
    impostor = keystone_access(scheduler_config, "carol", "d-x", "d-sales")
    assert default.clusters == {"c1", "c3"}
    assert sales.clusters == {"c2"}
    assert impostor.clusters == set()
    assert (default.domain, sales.domain) == ("", "d-sales")


def test_an_unconfirmed_token_is_no_identity():
    """With delay_auth_decision, auth_token passes on a token it refused
    (expired in its cache, say) with its plugin and status Invalid."""
    seen = {}

    def application(environ, start_response):
        seen.update(environ)
        return []

    class User:
        username, user_domain_id, user_domain_name = "mallory", "d", "D"
        role_names, system_scoped = ["admin"], True

    class Plugin:
        has_user_token = True
        user = User()

    for status, expected in (("Invalid", None), ("Confirmed", "mallory")):
        seen.clear()
        keystone.KeystoneIdentity(application)({
            keystone.TOKEN_AUTH_KEY: Plugin(),
            keystone.IDENTITY_STATUS_KEY: status}, None)
        identity = seen.get(access.IDENTITY_KEY)
        assert (identity and identity.user) == expected


@pytest.mark.parametrize("field, grant", [
    ("user", {"user": "a\ud800b", "role": "reader"}),
    ("user", {"user": "a\x00b", "role": "reader"}),
    ("user", {"user": "a\nb", "role": "reader"}),
    ("cluster", {"user": "u", "role": "reader", "cluster": "c\ud800"}),
    ("cluster", {"user": "u", "role": "reader", "cluster": "c\x00"}),
    ("domain", {"user": "u", "role": "reader", "domain": "d\x00"}),
    ("domain", {"user": "u", "role": "reader", "domain": "d" * 65}),
    ("domain", {"user": "u", "role": "reader", "domain": 7}),
])
def test_names_every_database_stores(app, field, grant):
    before = granted(app)
    response = call(app, "POST", "/v1/permissions", "root",
                    data=json.dumps(grant).encode())
    assert response.status_int == 400
    assert response.json["error"]["message"].startswith(field)
    assert granted(app) == before


def test_a_grant_is_logged_with_who_made_it(app, caplog):
    caplog.set_level(logging.INFO, logger="scheduler.api.permissions")
    added = call(app, "POST", "/v1/permissions", "root",
                 data=b'{"user": "u", "role": "reader", "domain": "d-ops"}')
    assert added.status_int == 201
    assert added.json["domain"] == "d-ops"
    [record] = caplog.records
    assert record.getMessage().startswith("'root' granted permission")


def test_htpasswd_problem_names_what_is_wrong(tmp_path):
    path = tmp_path / "htpasswd"
    assert auth.htpasswd_problem(str(path)).startswith(
        f"no such file; create it with 'htpasswd -c -B {path} USER'")
    assert "examples/api/noauth.conf" in auth.htpasswd_problem(str(path))
    assert auth.htpasswd_problem(str(tmp_path)) == (
        "cannot read it (Is a directory); " + auth.TRIAL_HINT)
    digest = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
    path.write_text(f"# users\nann:{digest}\nbob:{{SHA}}abc=\n")
    assert auth.htpasswd_problem(str(path)) == (
        "line 3 (user 'bob') is not a bcrypt hash; expected entries of "
        "'htpasswd -B'")
    path.write_text(f"ann:{digest}\n")
    assert auth.htpasswd_problem(str(path)) is None
