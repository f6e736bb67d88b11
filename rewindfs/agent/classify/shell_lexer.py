"""A small POSIX-shell lexer for the command classifier.

It reads a command the way a shell would: quotes, backslash escapes, comments, line
continuations, control operators, redirections with their file descriptors, heredocs
(bodies skipped, except what really runs), and ``$(...)``, backticks and ``<(...)`` nested
to any depth; then cuts the token stream into simple commands.
"""

from __future__ import annotations


class ParseError(ValueError):
    """The text is not a complete shell command (an unclosed quote, ``$(`` or heredoc)."""


class Token:
    """One shell token. A plain class: the classifier runs in every agent hook call, and
    dataclasses would cost each of them the import of inspect."""

    __slots__ = ("kind", "text", "quoted", "fd", "subs", "heredoc")

    def __init__(self, kind: str, text: str, quoted: bool = False, fd: str = "",
                 subs: list[list[Token]] | None = None, heredoc: str | None = None) -> None:
        self.kind = kind  # "word", "op" (control operator or parenthesis) or "redir"
        self.text = text  # a word's value after quote removal, or the operator itself
        self.quoted = quoted  # some part of a word was quoted or escaped
        self.fd = fd  # a redirect's explicit descriptor, as in 2>
        self.subs: list[list[Token]] = subs if subs is not None else []  # commands it runs
        self.heredoc = heredoc  # a << redirect's body

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.text!r})"


_METACHARS = frozenset(" \t\n;&|()<>")
_CONTROL_OPS = (";;&", ";;", ";&", ";", "&&", "&", "||", "|&", "|")
_REDIRECT_OPS = ("&>>", "&>", ">>", ">|", ">&", ">", "<<<", "<<-", "<<", "<>", "<&", "<")
_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}


class Lexer:
    """Turns shell text into tokens; ``nested`` lexers stop at the ``)`` closing ``$(``."""

    def __init__(self, text: str, start: int = 0, nested: bool = False) -> None:
        self.text = text
        self.pos = start
        self.nested = nested
        self.depth = 0  # parentheses opened and not yet closed
        self.tokens: list[Token] = []
        self.awaiting_delimiter: Token | None = None  # a << whose delimiter word comes next
        self.heredocs: list[tuple[Token, str, bool]] = []  # (redirect, delimiter, expands)

    def run(self) -> list[Token]:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t":
                self.pos += 1
            elif text.startswith("\\\n", self.pos):
                self.pos += 2
            elif ch == "\n":
                self._operator("\n")
                self._read_heredoc_bodies()
            elif ch == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif ch == ")" and self.depth == 0 and self.nested:
                return self._finish()
            elif ch in "()":
                # A ")" with nothing open is a case pattern; it only separates commands.
                self.depth = self.depth + 1 if ch == "(" else max(0, self.depth - 1)
                self._operator(ch)
            elif ch in "<>" and text.startswith("(", self.pos + 1):
                self._process_substitution()
            elif ch in "<>" or text.startswith("&>", self.pos):
                self._redirect("")
            elif ch in ";&|":
                self._operator(next(op for op in _CONTROL_OPS if text.startswith(op, self.pos)))
            else:
                self._word()
        if self.nested:
            raise ParseError("unclosed $(")
        return self._finish()

    def _finish(self) -> list[Token]:
        if self.depth or self.awaiting_delimiter:
            raise ParseError("unclosed ( or missing heredoc delimiter")
        self._read_heredoc_bodies()  # bash accepts a heredoc ended by the end of input
        return self.tokens

    def _operator(self, op: str) -> None:
        if self.awaiting_delimiter:
            raise ParseError("heredoc without a delimiter")
        self.tokens.append(Token("op", op))
        self.pos += len(op)

    def _redirect(self, fd: str) -> None:
        if self.awaiting_delimiter:
            raise ParseError("heredoc without a delimiter")
        op = next(op for op in _REDIRECT_OPS if self.text.startswith(op, self.pos))
        token = Token("redir", op, fd=fd)
        self.tokens.append(token)
        self.pos += len(op)
        if op in ("<<", "<<-"):
            self.awaiting_delimiter = token

    def _word(self) -> None:
        token = self._read_word()
        next_char = self.text[self.pos : self.pos + 1]
        if not token.quoted and token.text.isdigit() and next_char and next_char in "<>":
            self._redirect(token.text)  # the 2 of 2> is a descriptor, not an argument
            return
        self.tokens.append(token)
        if self.awaiting_delimiter:
            self.heredocs.append((self.awaiting_delimiter, token.text, not token.quoted))
            self.awaiting_delimiter = None

    def _read_word(self) -> Token:
        text = self.text
        out: list[str] = []
        token = Token("word", "")
        while self.pos < len(text) and text[self.pos] not in _METACHARS:
            ch = text[self.pos]
            if ch == "\\":
                escaped = text[self.pos + 1 : self.pos + 2]
                self.pos += 2
                if escaped != "\n":  # backslash-newline is a line continuation
                    out.append(escaped)
                    token.quoted = True
            elif ch == "'":
                end = text.find("'", self.pos + 1)
                if end < 0:
                    raise ParseError("unclosed single quote")
                out.append(text[self.pos + 1 : end])
                self.pos = end + 1
                token.quoted = True
            elif text.startswith("$'", self.pos):
                self._ansi_c_quoted(out)
                token.quoted = True
            elif ch == '"':
                self._double_quoted(out, token.subs)
                token.quoted = True
            elif ch in "$`":
                self._expansion(out, token.subs)
            else:
                out.append(ch)
                self.pos += 1
        token.text = "".join(out)
        return token

    def _double_quoted(self, out: list[str], subs: list[list[Token]]) -> None:
        text = self.text
        self.pos += 1
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == '"':
                self.pos += 1
                return
            if ch == "\\" and self.pos + 1 < len(text):
                escaped = text[self.pos + 1]
                if escaped in '$`"\\':
                    out.append(escaped)
                elif escaped != "\n":
                    out.append(ch + escaped)
                self.pos += 2
            elif ch in "$`":
                self._expansion(out, subs)
            else:
                out.append(ch)
                self.pos += 1
        raise ParseError("unclosed double quote")

    def _ansi_c_quoted(self, out: list[str]) -> None:
        text = self.text
        i = self.pos + 2
        while i < len(text):
            ch = text[i]
            if ch == "\\" and i + 1 < len(text):
                out.append(_ANSI_ESCAPES.get(text[i + 1], text[i + 1]))
                i += 2
            elif ch == "'":
                self.pos = i + 1
                return
            else:
                out.append(ch)
                i += 1
        raise ParseError("unclosed $' quote")

    def _expansion(self, out: list[str], subs: list[list[Token]]) -> None:
        """Consume one ``$...`` or backtick expansion, recording any command it runs."""
        text = self.text
        start = self.pos
        if text.startswith("$(", start):
            if not self._skip_arithmetic():
                inner = Lexer(text, start + 2, nested=True)
                subs.append(inner.run())
                self.pos = inner.pos + 1
        elif text.startswith("${", start):
            end = _matching_brace(text, start + 2)
            self.pos = end + 1
        elif text[start] == "`":
            body, self.pos = _backtick_body(text, start)
            subs.append(Lexer(body).run())
        else:
            self.pos += 1  # a plain $ or $name: nothing runs
        out.append(text[start : self.pos])

    def _skip_arithmetic(self) -> bool:
        """Skip ``$(( ... ))`` and return True; False when ``$((`` opens a subshell instead.

        Bash reads ``$((`` as arithmetic only if its inner parenthesis closes right before the
        outer one, as in ``$((1 + 2))``; ``$((cd x; rm y) )`` is a command substitution.
        """
        text = self.text
        if not text.startswith("$((", self.pos):
            return False
        depth = 0
        for i in range(self.pos + 1, len(text)):
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
                if depth == 1:
                    if text.startswith(")", i + 1):
                        self.pos = i + 2
                        return True
                    return False
        raise ParseError("unclosed $((")

    def _process_substitution(self) -> None:
        start = self.pos
        inner = Lexer(self.text, start + 2, nested=True)
        subs = [inner.run()]
        self.pos = inner.pos + 1
        # The command sees a pipe path, so no rule mistakes <(...) for a file it could clobber.
        self.tokens.append(Token("word", "/dev/fd/63", quoted=True, subs=subs))

    def _read_heredoc_bodies(self) -> None:
        text = self.text
        for token, delimiter, expands in self.heredocs:
            strip_tabs = token.text == "<<-"
            lines: list[str] = []
            while self.pos < len(text):
                end = text.find("\n", self.pos)
                end = len(text) if end < 0 else end
                line = text[self.pos : end]
                self.pos = min(end + 1, len(text))
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            token.heredoc = "\n".join(lines)
            if expands:
                token.subs = Lexer(token.heredoc).expansions_only()
        self.heredocs.clear()

    def expansions_only(self) -> list[list[Token]]:
        """Commands run by ``$(...)`` and backticks in text that is otherwise plain data."""
        subs: list[list[Token]] = []
        sink: list[str] = []
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "\\":
                self.pos += 2
            elif ch in "$`":
                self._expansion(sink, subs)
            else:
                self.pos += 1
        return subs


def _matching_brace(text: str, start: int) -> int:
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise ParseError("unclosed ${")


def _backtick_body(text: str, start: int) -> tuple[str, int]:
    """The command inside backticks (with its escapes undone) and the index after them."""
    body: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and text[i + 1 : i + 2] in ("`", "$", "\\"):
            body.append(text[i + 1])
            i += 2
        elif ch == "`":
            return "".join(body), i + 1
        else:
            body.append(ch)
            i += 1
    raise ParseError("unclosed backtick")


# --------------------------------------------------------------------------- commands


class Command:
    """One simple command: its words and its (operator, target word) redirections."""

    __slots__ = ("words", "redirects")

    def __init__(self) -> None:
        self.words: list[Token] = []
        self.redirects: list[tuple[Token, Token]] = []


def split_commands(tokens: list[Token]) -> list[Command]:
    commands = [Command()]
    stream = iter(tokens)
    for token in stream:
        if token.kind == "op":
            commands.append(Command())
        elif token.kind == "redir":
            target = next(stream, None)
            if target is None or target.kind != "word":
                raise ParseError("redirect without a target")
            commands[-1].redirects.append((token, target))
        else:
            commands[-1].words.append(token)
    return [c for c in commands if c.words or c.redirects]
