"""The student's side of a grading run's workspace (trees.Workspace): the
student's kernels.cu compiled inside a sandbox whose view holds only what
that compile needs (the system's compiler and CUDA toolkit, the lab's
headers, common/'s headers and library sources, /dev/null as its only
device, no /proc, and the student's file itself, bound at the path of the
skeleton so that the compile command is Meson's own); before it, the
include check of the text (shared/includes.py) and the compiler's own list
of the files the source includes (-M, compilerview.py); after it, the same
command with -E for the source rules; then the link with the trusted test
object.
"""
import os
import shlex
import shutil

from shared.includes import include_problems, lab_headers
from .compilerview import dependency_files, included_file_problems, library_binds
from . import sandbox

COMPILE_WALL_S = 180
# The compiler's list of included files (preprocessing alone, about a
# second for a lab): a file that never ends stops it here, not after
# COMPILE_WALL_S. The list of a lab's compile is about 20 KB.
DEPENDENCY_WALL_S = 30
DEPENDENCY_BYTES = 4 << 20
LINK_WALL_S = 120
COMPILE_MEMORY = 16 << 30
# Each file the compile writes (its temporaries, the object): the labs'
# objects are under 1 MiB, and objcheck.py refuses one over 64 MiB.
COMPILE_FILE_BYTES = 256 << 20


class StudentCompile:
    """The student-side methods of trees.Workspace, which provides src/,
    build/ and root (its folders), kernels_command, link_command and the
    trusted build's compile commands (_kernels_entry, _test_entry)."""

    def submitted_source(self, folder, tag="submission"):
        """Where compile_student keeps the student's kernels.cu."""
        return os.path.join(self.root, tag, folder, "kernels.cu")

    def rule_source(self, folder, tag="submission"):
        """What the source rules of the lab's tests (common/wb_rules.c) read:
        the student's kernels.cu as its compile saw it (nvcc -E, one file per
        architecture, made by compile_student), as the paths separated by ':'
        that WB_KERNELS_PREPROCESSED takes."""
        out_dir = os.path.join(self.root, tag, folder, "objects")
        return ":".join(os.path.join(out_dir, name) for name in sorted(os.listdir(out_dir))
                        if name.endswith(".ii"))

    def compile_student(self, folder, name, source, tag="submission"):
        """Compiles the student's kernels.cu (bytes) in a sandbox. Returns
        (ok, message, object path). tag names the folders of this compile,
        so that several can run at once (the planted bugs). Three steps: the
        include check of the text (fast, one line each), then the
        compiler's own list of the files the source includes
        (_included_files_problems), then the compile itself."""
        headers = lab_headers(self.src, folder)
        problems = include_problems(source.decode("utf-8", "replace"), set(headers))
        if problems:
            return False, "; ".join(problems[:5]), None
        command, output = self.kernels_command(folder, name)
        student_file = self.submitted_source(folder, tag)
        os.makedirs(os.path.dirname(student_file), exist_ok=True)
        with open(student_file, "wb") as f:
            f.write(source)
        out_dir = os.path.join(self.root, tag, folder, "objects")
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        view = self._compile_view(folder, headers, student_file, out_dir, output)
        object_path = output
        if not sandbox.available()[0]:
            # No sandbox to bind the student's file over the skeleton's path:
            # the command itself is pointed at the student's file and folder.
            source = self._kernels_entry(folder, name, "student")["file"]
            object_path = os.path.join(out_dir, os.path.basename(output))
            command = command.replace(source, student_file).replace(output, object_path)
        obj = os.path.join(out_dir, os.path.basename(output))
        problems = self._included_files_problems(command, view, obj, folder, headers, student_file)
        if problems:
            return False, "; ".join(problems[:5]), None
        # The same command with -E, in the same sandbox: the source rules
        # judge what this compile saw, macros expanded (rule_source).
        command = " && ".join([command] + preprocess_commands(command, object_path))
        run = self._run_compiler(command, view, COMPILE_WALL_S)
        if run["status"] is None:
            return False, f"the compiler ran past {COMPILE_WALL_S} s and was stopped", None
        if run["status"] != 0 or not os.path.isfile(obj) or not self.rule_source(folder, tag):
            return False, run["output"], None
        return True, run["output"], obj

    def _compile_view(self, folder, headers, student_file, out_dir, output):
        """The sandbox of the student's compile: the system and the toolkit,
        /dev/null as its only device, common/, the lab's headers, the
        student's file at the skeleton's path, none of the refused libraries;
        the object folder the only writable place (bound last)."""
        view = sandbox.view_args(
            ro=[os.path.join(self.src, "common")],
            ro_at=[(path, os.path.join(self.src, "labs", folder, header))
                   for header, path in headers.items()
                   if os.path.dirname(path).endswith(folder)]
            + [(student_file, os.path.join(self.src, "labs", folder, "kernels.cu"))]
            + library_binds(os.path.join(self.root, "hidden")),
            chdir=self.build, compile_only=True)
        return view + ["--bind", out_dir, os.path.join(self.build, os.path.dirname(output))]

    def _run_compiler(self, command, view, wall_s):
        return sandbox.run(["sh", "-c", command], cwd=self.build, env=sandbox.minimal_env(),
                           wall_s=wall_s, cpu_s=wall_s * 4, memory_bytes=COMPILE_MEMORY,
                           file_bytes=COMPILE_FILE_BYTES, output_bytes=200000, sandbox=view)

    def _included_files_problems(self, command, view, obj, folder, headers, student_file):
        """Asks the compiler which files the source includes: Meson's
        command with -M (the preprocessor alone, device and host passes;
        nvcc writes the list where the object goes), under
        DEPENDENCY_WALL_S. Returns the problems, one line each: a file the
        lab may not read (compilerview.included_file_problems), or the
        compiler's own errors when it stops (a missing or refused header)."""
        run = self._run_compiler(shlex.join(without_dependency_output(shlex.split(command)) + ["-M"]),
                                 view, DEPENDENCY_WALL_S)
        if run["status"] is None:
            return [f"the preprocessor ran past {DEPENDENCY_WALL_S} s and was stopped "
                    "(an include of a file that never ends, or of the file itself?)"]
        if run["status"] != 0 or not os.path.isfile(obj):
            return [run["output"] or "the compiler's list of included files failed"]
        with open(obj, encoding="utf-8", errors="replace") as f:
            rule = f.read(DEPENDENCY_BYTES)
        os.remove(obj)
        skeleton = os.path.join(self.src, "labs", folder, "kernels.cu")
        return included_file_problems(dependency_files(rule), self.build,
                                      [skeleton, student_file, *headers.values()],
                                      [os.path.join(self.src, "common")])

    def link_student(self, folder, name, obj, binary=None, test_object=None):
        """Links the checked student object with the trusted test object (or
        test_object, from visible_test_object) into binary (default: the
        build's <name>-student). Returns (ok, message, binary)."""
        _, output = self.kernels_command(folder, name)
        link = self.link_command(name)
        binary = binary or os.path.join(self.build, f"{name}-student")
        link = link.replace(f"-o {name}-student ", f"-o {binary} ", 1).replace(output, obj, 1)
        if test_object:
            link = link.replace(self._test_entry(folder, name)["output"], test_object, 1)
        if os.path.exists(binary):
            os.remove(binary)
        run = sandbox.run(["sh", "-c", link], cwd=self.build, env=dict(os.environ),
                          wall_s=LINK_WALL_S, memory_bytes=COMPILE_MEMORY, output_bytes=200000)
        if run["status"] != 0 or not os.path.isfile(binary):
            return False, run["output"] or "the link was stopped", None
        return True, run["output"], binary


def without_dependency_output(words):
    """A compile command's words less the dependency file it writes as it
    compiles (-MD/-MMD, -MF/-MQ/-MT FILE, -MP: newer Meson passes them to
    nvcc), which nvcc refuses beside -E or -M."""
    kept, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in ("-MF", "-MQ", "-MT"):
            skip = True
        elif word not in ("-MD", "-MMD", "-MP") and not word.startswith(("-MF", "-MQ", "-MT")):
            kept.append(word)
    return kept


def preprocess_commands(command, output):
    """Meson's compile command of a kernels.cu made into nvcc -E commands,
    one per GPU architecture it builds (-E keeps only the first -gencode's),
    each writing <object>-<n>.ii next to the object: code kept for one
    architecture only is judged on that one too."""
    words = without_dependency_output(shlex.split(command))
    gencodes, rest = [], []
    i = 0
    while i < len(words):
        if words[i] in ("-gencode", "--generate-code") and i + 1 < len(words):
            gencodes.append([words[i], words[i + 1]])
            i += 2
            continue
        if words[i].startswith(("-gencode=", "--generate-code=", "-arch=", "--gpu-architecture=")):
            gencodes.append([words[i]])
        elif words[i] == "-o" and i + 1 < len(words):
            i += 2
            continue
        elif words[i] != "-c":
            rest.append(words[i])
        i += 1
    stem = output[:-len(".o")] if output.endswith(".o") else output
    return [shlex.join(rest + ["-E"] + gencode + ["-o", f"{stem}-{n}.ii"])
            for n, gencode in enumerate(gencodes or [[]])]
