"""A kernels.cu's text as the preprocessor reads it, for the include check
(includes.py): a byte-order mark, NUL bytes, CR and CRLF line ends and line
splices (logical_lines), then comments, string and raw string literals,
digraphs and trigraphs (Lexer: the code without its comments, and the string
literals with the adjacent ones joined, as the compiler joins them).
"""
import re

# A line splice: a backslash (or its trigraph ??/), blanks that GCC allows
# with a warning, then the end of the line.
SPLICE = re.compile(r"(?:\\|\?\?/)[ \t\f\v]*$")
# A directive's "#", and its digraph and trigraph spellings.
HASH = r"[ \t\f\v]*(?:#|%:|\?\?=)[ \t\f\v]*"
HEADER_NAME_NEXT = re.compile(HASH + r"(?:include_next|include|import|embed)[ \t\f\v]*$")
# One token of the lexer (_Lexer), a run where the kind allows: a header
# name is read only after #include, and never on a line over HEADER_LINE
# characters (the check of each "<" stays short whatever the file).
TOKEN = re.compile(r"""(?P<newline>\n)|(?P<blank>[ \t\f\v]+)|(?P<line_comment>//[^\n]*)
    |(?P<block_comment>/\*)
    |(?P<number>\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*)
    |(?P<word>[A-Za-z_$\x80-\U0010ffff][A-Za-z0-9_$\x80-\U0010ffff]*)
    |(?P<quote>["'])|(?P<other>[^\s"'/.A-Za-z0-9_$\x80-\U0010ffff]+|.)""", re.X | re.S)
QUOTED = {'"': re.compile(r'"(?:[^"\\\n]|\\.)*"?'), "'": re.compile(r"'(?:[^'\\\n]|\\.)*'?"),
          "<": re.compile(r"<[^>\n]*>?")}
HEADER_LINE = 300
RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")
STRING_PREFIXES = ("u8", "u", "U", "L")
RAW_START = re.compile(r'"([^ ()\\\t\v\f\n"]{0,16})\(')


def logical_lines(text):
    """text as the preprocessor reads it, as a list of lines: no byte-order
    mark, NUL bytes as blanks (GCC ignores them with a warning), CR and CRLF
    line ends as line ends, and each line splice joined; the lines a splice
    joined come back as empty lines after the joined one, so that a line's
    number stays its number in the file."""
    text = text.replace("\ufeff", " ").replace("\0", " ").replace("\r\n", "\n").replace("\r", "\n")
    lines, joined, spliced = [], "", 0
    for line in text.split("\n"):
        splice = SPLICE.search(line) if line.rstrip(" \t\f\v").endswith(("\\", "??/")) else None
        if splice:
            joined += line[:splice.start()]
            spliced += 1
            continue
        lines.append(joined + line)
        lines += [""] * spliced
        joined, spliced = "", 0
    if spliced:
        lines.append(joined)
    return lines


class Lexer:
    """The code of a file without its comments (each one a blank, the line
    ends of a block comment kept) and without the bodies of its raw string
    literals (their line ends kept), so that the directives are the lines
    that start with "#"; and its string literals, the adjacent ones (which
    the compiler joins into one) joined, each with the line it starts on and
    whether it is the argument of _Pragma. Linear in the file's length."""

    def __init__(self, text):
        self.text, self.at, self.line = text, 0, 1
        self.code = []                      # the finished lines
        self.pieces, self.width = [], 0     # the line being read
        self.literals = []                  # (line, [pieces of the body], in _Pragma)
        self.joinable = False               # only blanks since the last literal
        self.last = ("", "")                # the last two tokens that are not blanks

    def run(self):
        text = self.text
        while self.at < len(text):
            if text[self.at] == "<" and self._after_include():   # a header name
                self._code(QUOTED["<"].match(text, self.at).group(0))
                continue
            token = TOKEN.match(text, self.at)
            kind, value = token.lastgroup, token.group(0)
            if kind == "newline":
                self._newline()
                self.at += 1
            elif kind == "line_comment":
                self._code(" ", width=len(value))
            elif kind == "block_comment":
                end = text.find("*/", self.at + 2)
                end = len(text) if end < 0 else end + 2
                for _ in range(text.count("\n", self.at, end)):
                    self._newline()
                self._code(" ", width=end - self.at)
            elif kind == "quote":
                self._quoted(value, "")
            elif kind == "word" and value in RAW_PREFIXES and RAW_START.match(text, token.end()):
                self.at = token.end()
                self._raw(value)
            elif kind == "word" and value in STRING_PREFIXES and text[token.end():token.end() + 1] in ('"', "'"):
                self.at = token.end()
                self._quoted(text[self.at], value)
            else:
                self._code(value)
        self._newline()
        return self.code, self.literals

    def _after_include(self):
        return self.width < HEADER_LINE and HEADER_NAME_NEXT.match("".join(self.pieces))

    def _newline(self):
        self.code.append("".join(self.pieces))
        self.pieces, self.width = [], 0
        self.line += 1

    def _code(self, token, width=None):
        """Adds token to the line and moves past width characters of the
        text (the token's own length unless it stands for a comment)."""
        self.pieces.append(token)
        self.width += len(token)
        self.at += len(token) if width is None else width
        if token.strip():
            self.joinable = False
            self.last = (self.last[1], token)

    def _quoted(self, quote, prefix):
        opening = self._literal_start()
        token = QUOTED[quote].match(self.text, self.at).group(0)
        self._code(prefix + token, width=len(token))
        if quote == '"':
            closed = len(token) > 1 and token.endswith('"')
            self._literal(token[1:-1] if closed else token[1:], *opening)

    def _raw(self, prefix):
        opening = self._literal_start()
        delimiter = RAW_START.match(self.text, self.at).group(1)
        close = ")" + delimiter + '"'
        start = self.at + len(delimiter) + 2
        end = self.text.find(close, start)
        end = len(self.text) if end < 0 else end
        body = self.text[start:end]
        self._code(f'{prefix}"{delimiter}(', width=0)
        for _ in range(body.count("\n")):
            self._newline()
        self._code(close, width=0)
        self.at = end + len(close)
        self._literal(body, *opening)

    def _literal_start(self):
        """What a literal starting here needs to know before it is read: its
        line, whether it follows "_Pragma (", whether it joins the last one."""
        return self.line, self.last == ("_Pragma", "("), self.joinable

    def _literal(self, body, line, in_pragma, joins):
        """A string literal's body: joined to the last one when only blanks
        and comments stand between them, as the compiler joins them."""
        if joins and self.literals:
            self.literals[-1][1].append(body)
        else:
            self.literals.append((line, [body], in_pragma))
        self.joinable = True
