"""``scheduler-manage``'s command line around oslo.config's parser:
where ``--config-file`` may go, and what a missing command prints.

oslo.config's sub-command parser knows ``--config-file`` only before the
command (``scheduler-manage --config-file F hosts list``); operators type
it after just as often (``scheduler-manage hosts list --config-file F``),
which argparse refuses as an unrecognized argument.
"""

import argparse
import sys
from collections.abc import Iterator
from collections.abc import Sequence

from scheduler.cmd import output

#: Options of the top-level parser that take a value and are moved in
#: front of the command (their order among themselves kept).
MOVED = ("--config-file", "--config-dir")

DESCRIPTION = (
    "Operator commands of metrics-scheduler: the database schema, the "
    "compute nodes and the metrics they report, dry-run placements, "
    "balancing, configuration checks and the demo. 'scheduler-manage "
    "COMMAND --help' shows a command's options; --config-file may come "
    "before or after the command.")

#: (name, help) of each command, in the order registered; filled by
#: ``remember_commands`` when the parser is built.
_commands: list[tuple[str, str]] = []


def config_options_first(argv: Sequence[str]) -> list[str]:
    """``argv`` with every ``--config-file``/``--config-dir`` (and its
    value) moved in front, where the top-level parser reads them."""
    moved: list[str] = []
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg in MOVED:
            moved += [arg, next(args, "")]
        elif arg.startswith(tuple(f"{name}=" for name in MOVED)):
            moved.append(arg)
        else:
            rest.append(arg)
    return moved + rest


def add_format(parser: argparse.ArgumentParser) -> None:
    """The ``--format`` option of a command that prints rows."""
    parser.add_argument("--format", choices=output.FORMATS, default="table",
                        help="output format (default: %(default)s)")


def _commands_of(subparsers) -> Iterator[tuple[str, str, object]]:
    """(name, help, parser) of each command under ``subparsers``, at any
    depth (``db sync`` under ``db``)."""
    # argparse keeps the help of each sub-command only in these actions.
    for action in subparsers._choices_actions:
        parser = subparsers.choices[action.dest]
        yield action.dest, action.help or "", parser
        for nested in parser._actions:
            if isinstance(nested, argparse._SubParsersAction):
                yield from _commands_of(nested)


def remember_commands(subparsers) -> None:
    """Let the parser accept no command (``missing_command`` then says
    which there are, instead of argparse's "required: category"), and
    give each command's ``--help`` the text its parent lists it with
    (argparse shows only the usage otherwise)."""
    subparsers.required = False
    subparsers.metavar = "COMMAND"
    _commands[:] = [(action.dest, action.help or "")
                    for action in subparsers._choices_actions]
    for _name, text, parser in _commands_of(subparsers):
        if parser.description is None:
            parser.description = text


def commands_first(parser, subparsers) -> None:
    """List the commands right under the description in ``--help``:
    argparse prints its groups in creation order, which would put them
    after the ~60 lines of oslo.log's options."""
    groups = parser._action_groups
    groups.insert(0, groups.pop(groups.index(subparsers.container)))


def missing_command(prog: str) -> int:
    """Exit status 2 after listing the commands on stderr."""
    width = max((len(name) for name, _ in _commands), default=0)
    lines = [f"{prog}: error: name a command:"]
    lines += [f"  {name:<{width}}  {text}" for name, text in _commands]
    lines.append(f"'{prog} COMMAND --help' shows a command's options, "
                 f"'{prog} --help' the options all commands share.")
    print("\n".join(lines), file=sys.stderr)
    return 2
