"""`grading/workbook status`: every lab's stages with their states
(progress.py reads them), a progress bar and what to do next; with --run it
builds and runs the tests first (testruns.py). watching.py draws its screen
with the same rows."""
import textwrap

from shared import labs
from shared.progressbar import progress_bar
from . import builddir
from .progress import lab_state, stage_states
from . import testruns
from . import ui
from .ui import Style, lab_or_exit

MARKS = {"fast": ("★", Style.green), "passing": ("✔", Style.green),
         "failing": ("✘", Style.red), "skipped": ("-", Style.yellow),
         "not run": ("·", Style.dim), "not started": ("·", Style.dim)}
STATE_WIDTH = max(len(s) for s in MARKS)
TITLE_WIDTH = 46   # the longest titles: on a wider terminal the state stays near its title



def chosen_labs(args):
    """The labs `status --run` builds and tests: those named (added to the
    build if need be), else those --labs set, else every lab in the build."""
    lab_list = None
    if args.labs is not None:
        lab_list = [] if args.labs == "all" else [n for n in args.labs.split(",") if n]
    builddir.configure(lab_list, args.gpu_arch)
    named = named_labs(args)
    if named:
        builddir.add_labs(named)
        return named
    return [name for _, name in builddir.labs_in_build()]


def named_labs(args):
    """The labs the command names (LAB, --lab, or --labs other than all): the
    screen shows those alone, and the others in one line."""
    named = (args.lab or []) + (args.labs_named or [])
    if not named and args.labs not in (None, "all"):
        named = [n for n in args.labs.split(",") if n]
    return list(dict.fromkeys(lab_or_exit(n)[1] for n in named))


def stage_rows(name, states, name_width, details=True):
    """A lab's stage rows fitted to the terminal: the title wrapped in its
    column, a test's message whole under its row (unless details is False:
    watch shows the lowest failure's messages after the rows)."""
    lines = []
    for stage, title, state, detail in states:
        mark, paint = MARKS[state]
        prefix = f"  {mark} {name:<{name_width}} stage {stage:<2} "
        title_width = max(12, min(TITLE_WIDTH, ui.width() - len(prefix) - STATE_WIDTH - 2))
        titles = textwrap.wrap(title, title_width, break_long_words=False) or [""]
        lines.append(f"  {paint(mark)} {name:<{name_width}} stage {stage:<2} "
                     f"{titles[0]:<{title_width}}  {paint(state)}")
        lines += [" " * len(prefix) + more for more in titles[1:]]
        if details and detail and state != "skipped":   # the reason for skipping goes below, once
            lines += ui.wrap(detail, indent=8)
    return lines


def others_line(states_by_lab):
    """"10 other labs: 3 passing, 7 not started"."""
    counts = {}
    for states in states_by_lab.values():
        state = lab_state(states)
        counts[state] = counts.get(state, 0) + 1
    labs_word = "lab" if len(states_by_lab) == 1 else "labs"
    return f"{len(states_by_lab)} other {labs_word}: " + ", ".join(f"{n} {s}" for s, n in counts.items())


def say(text, paint=str):
    """A line of prose, wrapped between words at the terminal's width."""
    print("\n".join(paint(line) for line in ui.wrap(text)))


def status(args):
    broken = {}
    if args.run or args.rerun or args.lab or args.labs_named or args.labs is not None \
            or args.gpu_arch:
        broken = testruns.build_and_test(chosen_labs(args), args.rerun)
    focus = named_labs(args)
    states = {name: stage_states(folder, name, args.within) for folder, name in labs.all_labs()}
    shown = {name: s for name, s in states.items() if not focus or name in focus}
    others = {name: s for name, s in states.items() if name not in shown}
    all_stages = [(name, *row) for name, rows in shown.items() for row in rows] + \
                 [(name, *row) for name, rows in others.items() for row in rows]
    done = sum(state in ("passing", "fast") for _, _, _, state, _ in all_stages)
    name_width = max(len(name) for name in shown)
    print(Style.bold("cuda-workbook progress"))
    for name, rows in shown.items():
        if name not in broken:   # its messages come last, instead of its rows
            print("\n".join(stage_rows(name, rows, name_width)))
    if others:
        say(others_line(others) + " (`grading/workbook status` lists them)", Style.dim)
    # The bar counts what is on screen: the labs asked for (the others have
    # their line above), or every lab.
    shown_stages = [row for rows in shown.values() for row in rows]
    shown_done = sum(state in ("passing", "fast") for _, _, state, _ in shown_stages)
    print("\n" + progress_bar(shown_done, len(shown_stages)))
    reasons = {}
    for _, _, _, state, detail in all_stages:
        if state == "skipped":
            reasons[detail] = reasons.get(detail, 0) + 1
    for reason, count in reasons.items():
        stages = "1 stage was" if count == 1 else f"{count} stages were"
        say(f"{stages} not tested: {reason}", Style.yellow)
    outside = [n for _, n in labs.all_labs() if n not in {m for _, m in builddir.labs_in_build()}]
    if outside and builddir.options() and not focus:
        say(f"Not in {builddir.BUILD.name}/: {', '.join(outside)} "
            "(`grading/workbook --labs all` builds every lab).", Style.dim)
    next_step = next(((name, stage, state) for name, stage, _, state, _ in all_stages
                      if state in ("not started", "not run", "failing", "skipped")), None)
    if broken:
        first = next(iter(broken))
        say(f"Next: make {first} compile (the compiler's messages are below), then "
            f"`grading/workbook watch {first}` while you edit.")
    elif next_step:
        name, stage, state = next_step
        verb = {"failing": "fix", "not run": "do", "not started": "start", "skipped": "write"}[state]
        where = " (its tests run where there is a GPU)" if state == "skipped" else ""
        say(f"Next: {verb} {name} stage {stage}{where}: `grading/workbook watch {name}` "
            f"while you edit, `grading/workbook hint {name} {stage}` when stuck.")
    elif all_stages and done == len(all_stages):
        say("Every stage passes. Well done.", Style.green)
    for name, output in broken.items():   # last: nothing scrolls them away
        print(Style.red(f"\n{name} does not compile:"))
        ui.show_compiler_messages(output, labs.find_lab(name)[0])
    return 1 if broken else 0


def add_command(sub):
    s = sub.add_parser("status", help="every lab and stage with its state, and what to do next "
                       "(`grading/workbook` alone is `status --run`)",
                       description="Every lab and stage: not started (the skeleton untouched), "
                       "not run, failing, passing, or passing within PCT% of the reference's speed; "
                       "a progress bar and what to do next. With LAB (or --lab, --labs), that lab's "
                       "stages only and one line for the others. "
                       "With --run, first builds the labs' tests (only what changed) and runs them; "
                       "LAB, --lab, --labs, --gpu-arch and --rerun imply --run.")
    s.add_argument("labs_named", nargs="*", metavar="LAB",
                   help="only these labs (added to the build if it lacks them)")
    s.add_argument("--run", action="store_true", help="build and run the tests first")
    s.add_argument("--rerun", action="store_true",
                   help="run the tests even of labs where nothing changed since their last run "
                        "(a race may show in one run and not in another)")
    s.add_argument("--lab", action="append", metavar="LAB", help="the same as LAB (repeatable)")
    s.add_argument("--labs", metavar="LIST",
                   help="build only these labs from now on, e.g. "
                        "00-vector-add,reduction (meson's -Dlabs; 'all' for every lab)")
    s.add_argument("--gpu-arch", metavar="ARCH",
                   help="build for these GPU architectures from now on "
                        "(meson's -Dgpu_arch: 'auto' for the GPU present, or e.g. '8.6 9.0')")
    s.add_argument("--within", type=float, default=20.0, metavar="PCT",
                   help="'fast' means within PCT%% of the reference's speed (default 20)")
    s.set_defaults(func=status)
