"""What a grade says as it goes, on stderr: one line per lab and phase with
the time since the grade began, a progress bar on a terminal, the seconds
of each phase per lab (for the reports), and what was done when a grade is
stopped.

The phases of a lab: build (the trusted tree's lab and the student's
compile, check and link), tests (the stage tests' record runs), judge (the
reference judging those recordings), timing (the timing tests, recorded and
judged), sanitize (--sanitize's runs). A line for the tests and the judge
comes once the lab's stage tests are done, one for timing once its timing
tests are; on a terminal the bar counts the tests of the lab meanwhile."""
import sys
import time

from shared.progressbar import progress_bar

PHASES = ("build", "tests", "judge", "timing", "sanitize")


class Phases:
    def __init__(self, lab_names, stream=sys.stderr):
        self.start = time.monotonic()
        self.names = list(lab_names)
        self.stream = stream
        self.tty = stream.isatty()
        self.times = {}       # lab: {phase: seconds}
        self.said = {}        # lab: ["build ok 3.1 s", ...], what the lines said
        self.tests = {}       # lab: [tests done, tests in all, passed, did not run]
        self.current = None   # the lab being graded

    # ------------------------------------------------------------ output
    def say(self, lab, text):
        """One line "[ elapsed] lab: text", above the bar on a terminal."""
        self.said.setdefault(lab, []).append(text)
        elapsed = time.monotonic() - self.start
        self.stream.write(("\r\033[K" if self.tty else "") + f"[{elapsed:6.1f} s] {lab}: {text}\n")
        self.draw()

    def draw(self):
        """The bar (labs done of all) and the lab's tests so far: terminal only."""
        if not self.tty or self.current is None:
            return
        done = len([n for n in self.names if n in self.said and n != self.current])
        ran, count = self.tests[self.current][:2]
        doing = f"tests {ran}/{count}" if "build" in self.times[self.current] else "building"
        bar = progress_bar(done, len(self.names), width=20, unit="labs")
        self.stream.write(f"\r\033[K{bar}  {self.current}: {doing}")
        self.stream.flush()

    # ---------------------------------------------------------- phases
    def begin_lab(self, lab):
        self.current = lab
        self.times[lab] = {}
        self.tests[lab] = [0, 0, 0, 0]
        self.draw()

    def expect_tests(self, lab, count):
        self.tests[lab][1] = count

    def add(self, lab, phase, seconds):
        self.times[lab][phase] = self.times[lab].get(phase, 0.0) + seconds

    def built(self, lab, status, seconds):
        self.add(lab, "build", seconds)
        self.say(lab, f"build {status} ({seconds:.1f} s)")

    def test_done(self, lab, test, got=None):
        """A test's record and judge runs (judge.run_test's result, None
        for a test not run) are over."""
        if got is not None and test.startswith("timing_"):
            self.add(lab, "timing", got["seconds"] + got["judge_seconds"])
        elif got is not None:
            self.add(lab, "tests", got["seconds"])
            self.add(lab, "judge", got["judge_seconds"])
        counts = self.tests[lab]
        counts[0] += 1
        counts[2] += got is not None and got["status"] == "passed"
        counts[3] += got is None or got["status"] == "skipped"
        self.draw()

    def before_test(self, lab, test):
        """The stage tests' lines come before the first timing test."""
        if test.startswith("timing_"):
            self.stage_tests_said(lab)

    def stage_tests_said(self, lab):
        if any(line.startswith("tests ") for line in self.said.get(lab, [])):
            return
        ran, _, passed, not_run = self.tests[lab]   # the stage tests, before any timing test
        times = self.times[lab]
        self.say(lab, f"tests {passed}/{ran} passed" + (f", {not_run} did not run" if not_run else "")
                 + f" ({times.get('tests', 0):.1f} s)")
        self.say(lab, f"judge ({times.get('judge', 0):.1f} s)")

    def end_lab(self, lab, result):
        """The lab's last lines; its phase times go into its result (the reports)."""
        times = self.times[lab]
        if result["build"] == "ok":
            self.stage_tests_said(lab)
        for phase in ("timing", "sanitize"):
            if phase in times:
                self.say(lab, f"{phase} ({times[phase]:.1f} s)")
        result["phases"] = {phase: round(s, 1) for phase, s in times.items()}
        self.current = None   # the bar counts it as done
        self.say(lab, f"done: {result['score']:g}/{result['max_score']:g} points")

    # ----------------------------------------------------------- stopped
    def what_was_done(self):
        """A grade that was stopped: each lab's phases that finished, the
        one it was in, and the labs not started."""
        parts = []
        for lab in self.names:
            if lab not in self.times:
                continue
            said = [s for s in self.said.get(lab, []) if not s.startswith("done")]
            ran, count = self.tests[lab][:2]
            if any(s.startswith("done") for s in self.said.get(lab, [])):
                where = []
            elif "build" not in self.times[lab]:
                where = ["stopped while building"]
            else:
                where = [f"stopped after {ran} of its {count} tests"]
            parts.append(f"{lab}: " + ", ".join(said + where))
        waiting = [lab for lab in self.names if lab not in self.times]
        if waiting:
            parts.append("not started: " + ", ".join(waiting))
        return "; ".join(parts) or "nothing was graded yet"

    def finish(self):
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()
