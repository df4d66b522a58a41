"""What every student command prints with: colour on a terminal only, the
lab a name stands for, and a failed build's messages."""
import os
import sys

import labs


class Style:
    """ANSI colour on a terminal, plain text when piped or NO_COLOR is set."""
    on = sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"

    @classmethod
    def paint(cls, code, text):
        return f"\033[{code}m{text}\033[0m" if cls.on else text

    green = classmethod(lambda cls, t: cls.paint("32", t))
    red = classmethod(lambda cls, t: cls.paint("31", t))
    yellow = classmethod(lambda cls, t: cls.paint("33", t))
    bold = classmethod(lambda cls, t: cls.paint("1", t))
    dim = classmethod(lambda cls, t: cls.paint("2", t))


def lab_or_exit(name):
    """(folder, name) of a lab given as "reduction", "04-reduction" or "04";
    exits with status 2 and the list of labs when there is none."""
    found = labs.find_lab(name)
    if not found:
        fail(f"unknown lab '{name}'; the labs are: " + ", ".join(lab for _, lab in labs.all_labs()))
    return found


def fail(message, status=2):
    """Ends a command with one line on stderr: status 2 for a usage error."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(status)


def show_compiler_messages(output, limit=8):
    print("\n".join("  " + l for l in labs.compiler_messages(output, limit).splitlines()))
