"""``scheduler-manage``'s command line around oslo.config's parser:
where ``--config-file`` may go, and what a missing command prints.

oslo.config's sub-command parser knows ``--config-file`` only before the
command (``scheduler-manage --config-file F hosts list``); operators type
it after just as often (``scheduler-manage hosts list --config-file F``),
which argparse refuses as an unrecognized argument.
"""

import sys
from collections.abc import Sequence

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


def remember_commands(subparsers) -> None:
    """Let the parser accept no command (``missing_command`` then says
    which there are, instead of argparse's "required: category")."""
    subparsers.required = False
    subparsers.metavar = "COMMAND"
    # argparse keeps the help of each sub-command only in these actions.
    _commands[:] = [(action.dest, action.help or "")
                    for action in subparsers._choices_actions]


def missing_command(prog: str) -> int:
    """Exit status 2 after listing the commands on stderr."""
    width = max((len(name) for name, _ in _commands), default=0)
    lines = [f"{prog}: error: name a command:"]
    lines += [f"  {name:<{width}}  {text}" for name, text in _commands]
    lines.append(f"'{prog} COMMAND --help' shows a command's options, "
                 f"'{prog} --help' the options all commands share.")
    print("\n".join(lines), file=sys.stderr)
    return 2
