"""What every student command prints with: colour on a terminal only, lines
fitted to the terminal's width, the lab a name stands for, and a failed
build's messages (buildmessages.py)."""
import difflib
import os
import shutil
import sys
import textwrap

from shared import labs
from . import buildmessages


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


def width():
    """The terminal's columns; 80 when the output is not a terminal."""
    return shutil.get_terminal_size((80, 24)).columns


def wrap(text, indent=0, first_indent=None):
    """text as lines of at most width() columns, broken between words only
    (a word longer than a line, a path, stays whole on a line of its own)."""
    first = " " * (indent if first_indent is None else first_indent)
    return textwrap.wrap(text, max(20, width()), initial_indent=first, subsequent_indent=" " * indent,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def fit(line, indent=2):
    """A line of a program's message, indented: as it is where it fits (a
    table keeps its columns), else wrapped between words."""
    if len(line) + indent <= width():
        return [" " * indent + line]
    lead = len(line) - len(line.lstrip())
    return wrap(line.strip(), indent=indent + lead + 2, first_indent=indent + lead)


def lab_or_exit(name, commands=()):
    """(folder, name) of a lab given as "reduction", "04-reduction" or "04";
    exits with status 2, the list of labs and the closest names when there is
    none (the closest command too, where the word could have been one)."""
    found = labs.find_lab(name)
    if not found:
        names = [lab for _, lab in labs.all_labs()]
        folders = [folder for folder, _ in labs.all_labs()]
        close = difflib.get_close_matches(name, names + folders + list(commands), n=1)
        guess = "" if not close else f" Did you mean the command '{close[0]}'?" \
            if close[0] in commands else f" Did you mean '{close[0]}'?"
        fail(f"unknown lab '{name}'; the labs are: " + ", ".join(names) + "." + guess)
    return found


def fail(message, status=2):
    """Ends a command with one line on stderr (wrapped between words on a
    terminal): status 2 for a usage error."""
    line = f"error: {message}"
    print("\n".join(wrap(line, indent=2, first_indent=0)) if sys.stderr.isatty() else line, file=sys.stderr)
    sys.exit(status)


def show_compiler_messages(output, folder):
    """A failed build's messages as the student needs them: their own files'
    paths, the first error first, a missing entry point named once."""
    for line in buildmessages.for_student(output, folder):
        # a line the compiler indented (the source line, the caret under it)
        # is kept as it is: wrapped, the caret would point elsewhere
        print("\n".join(fit(line)) if not line.startswith(" ") else "  " + line)
