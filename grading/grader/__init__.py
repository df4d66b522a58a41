"""The autograder (`grade`, `batch`, Slurm) and the student copy (`release`);
grading/README.md's module table says what each module does. It imports
shared/, never student/: a TA reads it without the student's commands."""
