"""scheduler-api's start-up checks of its library options: the Keystone
auth plugin and the oslo.policy rules file, each problem one
ConfigError naming the option, the value and what was expected."""

import logging

import pytest
from oslo_config import cfg

from scheduler import exception
from scheduler.cmd import api_checks
from scheduler.cmd import config_check
from scheduler.conf import api as api_conf
from tests.fakes import conf_from_text


@pytest.fixture
def load(tmp_path):
    """A private ConfigOpts of scheduler-api parsing ``text``."""
    def parse(text: str) -> cfg.ConfigOpts:
        return conf_from_text(tmp_path / "scheduler.conf", text,
                              api_conf.register_library_opts,
                              project="scheduler")
    return parse


KEYSTONE = "[api]\nauth_strategy = keystone\n"


def _error(check, conf) -> exception.ConfigError:
    with pytest.raises(exception.ConfigError) as raised:
        check(conf)
    return raised.value


def test_unknown_auth_type_is_named_with_a_suggestion(load):
    conf = load(KEYSTONE + "[keystone_authtoken]\nauth_type = passwrd\n")
    error = _error(api_checks.validate_keystone_auth, conf)
    assert (error.group, error.option, error.value) == (
        "keystone_authtoken", "auth_type", "passwrd")
    assert "expected the name of an installed keystoneauth1 plugin: " in (
        str(error))
    assert str(error).endswith("; did you mean 'password'?")


def test_auth_type_is_read_from_auth_section(load):
    conf = load(KEYSTONE + "[keystone_authtoken]\nauth_section = ks\n"
                "[ks]\nauth_type = v3pasword\n")
    error = _error(api_checks.validate_keystone_auth, conf)
    assert (error.group, error.value) == ("ks", "v3pasword")


def test_auth_type_is_not_checked_without_keystone(load):
    conf = load("[keystone_authtoken]\nauth_type = passwrd\n")
    api_checks.validate_keystone_auth(conf)
    api_checks.load_keystone_auth(conf)


def test_no_auth_type_is_keystonemiddlewares_legacy_options(load):
    api_checks.load_keystone_auth(load(KEYSTONE))


def test_a_required_option_of_the_plugin_is_named(load):
    conf = load(KEYSTONE + "[keystone_authtoken]\nauth_type = password\n"
                "username = scheduler\n")
    error = _error(api_checks.load_keystone_auth, conf)
    assert str(error) == ("invalid value None for [keystone_authtoken] "
                          "auth_url: required by auth_type password")


def test_a_complete_plugin_loads_without_contacting_keystone(load):
    conf = load(KEYSTONE + "[keystone_authtoken]\nauth_type = password\n"
                "auth_url = http://192.0.2.1:5000\nusername = scheduler\n"
                "password = secret\n")
    api_checks.load_keystone_auth(conf)
    # Registered as keystonemiddleware will: read, so not "unknown".
    assert conf.keystone_authtoken.username == "scheduler"


def test_missing_default_policy_file_uses_the_rules_in_code(load):
    api_checks.validate_policy_file(load("[DEFAULT]\n"))


@pytest.mark.parametrize("value, where", [
    ("/nonexistent/policy.yaml", "no such file; "),
    ("policy-typo.yaml", "no such file (a relative path is looked for "
                         "beside the config files); "),
])
def test_explicit_policy_file_must_exist(load, value, where):
    conf = load(f"[oslo_policy]\npolicy_file = {value}\n")
    error = _error(api_checks.validate_policy_file, conf)
    assert str(error) == (f"invalid value {value!r} for [oslo_policy] "
                          f"policy_file: {where}remove the option to use "
                          "the rules in code")


def test_explicit_default_name_must_exist_too(load):
    conf = load("[oslo_policy]\npolicy_file = policy.yaml\n")
    assert "no such file" in str(_error(api_checks.validate_policy_file,
                                        conf))


@pytest.fixture
def policy_conf(load, tmp_path):
    def write(text: str) -> cfg.ConfigOpts:
        path = tmp_path / "policy.yaml"
        path.write_text(text)
        return load(f"[oslo_policy]\npolicy_file = {path}\n")
    return write


@pytest.mark.parametrize("text, problem", [
    ('"scheduler:read": "role:admin or"\n',
     "rule 'scheduler:read': 'role:admin or' cannot be parsed (Failed to "
     "understand rule role:admin or); oslo.policy would deny every "
     "request it guards"),
    ('"scheduler:read": "rolex"\n',
     "rule 'scheduler:read': 'rolex' cannot be parsed"),
    ('"scheduler:read": 5\n', "rule 'scheduler:read': 5 cannot be parsed"),
    ('"scheduler:read": "rule:no_such_rule"\n',
     "rule(s) scheduler:read reference an undefined rule or are part of "
     "a cycle"),
    ('"scheduler:read": [unclosed\n', "cannot be loaded: "),
    ("- a list\n", "expected a YAML mapping of rule names to rules"),
])
def test_a_bad_rule_is_named_without_a_traceback(policy_conf, caplog,
                                                 text, problem):
    conf = policy_conf(text)
    caplog.set_level(logging.DEBUG)
    error = _error(api_checks.validate_policy_file, conf)
    assert (error.group, error.option) == ("oslo_policy", "policy_file")
    assert problem in str(error)
    assert "\n" not in str(error)
    # oslo.policy's own lines (a traceback for a parse failure) are kept
    # from the log: the one line above says it all.
    assert not [r for r in caplog.records
                if r.name.startswith("oslo_policy")
                and r.levelno >= logging.WARNING]


def test_good_policy_file_passes(policy_conf):
    conf = policy_conf('"scheduler:read": "role:admin or role:reader"\n'
                       '"scheduler:policy:create": "rule:scheduler:read"\n')
    api_checks.validate_policy_file(conf)


def test_bad_rule_of_a_policy_dir_is_reported(load, tmp_path):
    rules = tmp_path / "policy.d"
    rules.mkdir()
    (rules / "extra.yaml").write_text('"scheduler:read": "role:admin or"\n')
    conf = load(f"[oslo_policy]\npolicy_dirs = {rules}\n")
    error = _error(api_checks.validate_policy_file, conf)
    assert error.option == "policy_dirs"
    assert "Failed to understand rule role:admin or" in str(error)


def test_config_check_runs_the_api_checks(load, tmp_path):
    conf = load(KEYSTONE + "[keystone_authtoken]\nauth_type = passwrd\n"
                "[oslo_policy]\npolicy_file = /nonexistent.yaml\n")
    lines = config_check.problems(conf)
    assert any(line.startswith("[keystone_authtoken] auth_type: value "
                               "'passwrd': expected") for line in lines)
    assert any(line.startswith("[oslo_policy] policy_file: value "
                               "'/nonexistent.yaml': no such file")
               for line in lines)
