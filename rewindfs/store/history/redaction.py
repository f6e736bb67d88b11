"""Secrets out of text that is kept: the one redactor for command lines and reasons.

A checkpoint's reason is often the command an agent was about to run, and commands carry
credentials (`curl -H "Authorization: Bearer ..."`, `mysql --password=...`,
`TOKEN=... ./deploy`). A reason is kept in the commit message, the reflog, the hooks' log,
notes and everything a push sends, so every reason, action summary and hook log line goes
through `redact` before it is written anywhere. What it hides, each replaced by `***`
(the name or scheme kept, so the text still says what ran):

- HTTP headers that carry credentials: `Authorization: Bearer|Basic|token X`, and any
  header whose name says token, secret, key, password, auth or cookie;
- options whose name says password, passwd, token, secret, api key or credentials, in
  `--opt=X` and `--opt X` form; the attached `-pX` of mysql, mariadb and sshpass,
  `redis-cli -a X`, the password of `curl -u user:X` / `--user user:X`;
- assignments `NAME=X` (and `export NAME=X`, `NAME: X` in JSON/YAML-like text) of names
  that say token, secret, password, passwd, pwd, api key, access key, private key,
  credentials or auth;
- the user part of URLs (`scheme://user:pass@host`, `https://TOKEN@host`) and query
  values of credential-like parameters (`?access_token=X`, `&api_key=X`, `&sig=X`);
- well-known key formats wherever they stand: OpenAI/Anthropic/Stripe-style `sk-`,
  `sk_live_`, `rk_`/`pk_` keys, GitHub `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_`/`github_pat_`,
  GitLab `glpat-`, Slack `xox?-`, AWS access key ids, Google `AIza` keys and `ya29.`
  tokens, Hugging Face `hf_`, npm `npm_`, PyPI `pypi-`, SendGrid `SG.`, JSON web tokens,
  and PEM private key blocks.

Redacting is idempotent (`***` is never taken for a secret), and errs on the side of
hiding: an option value that only looks like a password is hidden too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

MASK = "***"

_SECRET_WORD = (r"(?:pass(?:word|wd|phrase)|pwd|token|secret|api[-_]?key|apikey|"
                r"access[-_]?key|private[-_]?key|credentials?|auth(?:[-_]?token)?(?!or)|"
                r"session[-_]?key|cookie)")
_VALUE = r"""(?:'[^']*'|"[^"]*"|[^\s'"&;|)]+)"""

def _any(*marks: str) -> Callable[[str], bool]:
    return lambda low: any(mark in low for mark in marks)


def _hinted(*marks: str) -> Callable[[str], bool]:
    """Some mark, and a word a secret's name has in it."""
    return lambda low: any(m in low for m in marks) and any(h in low for h in _HINTS)


_HINTS = ("pass", "pwd", "token", "secret", "key", "credential", "auth", "cookie")

# (when it may apply, on the lowercased text; the pattern; its flags; the replacement).
# Compiled on first use (`_compiled`): a hook redacts a short command per call, and
# compiling every rule would cost it a few milliseconds each time.
_RULES: list[tuple[Callable[[str], bool], str, int, str]] = [
    # PEM private keys (whole blocks, or what is left of one cut short)
    (_any("private key"), r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?!\*\*\*)(?:.*?-----END "
     r"[A-Z0-9 ]*PRIVATE KEY-----|.*)", re.S, "-----BEGIN PRIVATE KEY-----" + MASK),
    # scheme://user:password@host and scheme://token@host
    (lambda low: "://" in low and "@" in low,
     r"(?i)\b([a-z][a-z0-9+.-]*://)(?!\*\*\*@)[^\s/@'\"]+@", 0, r"\1" + MASK + "@"),
    # Authorization: <scheme> <credential>
    (_any("authorization"), r"(?i)(\b(?:proxy-)?authorization\s*:\s*(?:(?:bearer|basic|"
     r"token|digest|negotiate|apikey|key|otp)\s+)?+)(?!\*\*\*)[^\s'\"]+", 0, r"\1" + MASK),
    # other credential headers: X-Api-Key: v, Cookie: v, PRIVATE-TOKEN: v
    (_hinted(":"), r"(?i)((?<![\w-])(?!(?:proxy-)?authorization\b)[\w-]*(?:token|secret|"
     r"api[-_]?key|apikey|password|passwd|cookie|auth(?!or))[\w-]*\s*:\s*)(?!\*\*\*)(?!//)"
     r"[^\s'\",}]+", 0, r"\1" + MASK),
    # --password=v, --api-key v, --client-secret=v (never a following option)
    (_hinted("--"), r"(?i)(--[\w-]*" + _SECRET_WORD + r"[\w-]*)(=|\s+)(?!-)(?!\*\*\*)" + _VALUE,
     0, r"\1\2" + MASK),
    # mysql -pSECRET, sshpass -pSECRET, redis-cli -a SECRET
    (_any("mysql", "mariadb", "sshpass"),
     r"(\b(?:mysql\w*|mariadb\w*|sshpass)\b[^|;&\n]*?\s-p)(?!\*\*\*)(\S+)", 0, r"\1" + MASK),
    (_any("redis-cli"), r"(\bredis-cli\b[^|;&\n]*?\s-a\s+)(?!\*\*\*)(\S+)", 0, r"\1" + MASK),
    # curl -u user:password, --user user:password, --proxy-user user:password
    (_any("-u", "--user", "--proxy-user"), r"((?:\s-u\s*|--(?:proxy-)?user[=\s]\s*)['\"]?"
     r"[^\s:'\"]+:)(?!\*\*\*)[^\s'\"]+", 0, r"\1" + MASK),
    # NAME=value, export NAME=value, "name": "value", name: value
    (_hinted("=", ":"), r"(?i)(\b[\w.-]*" + _SECRET_WORD + r"[\w.-]*['\"]?\s*(?:=|:\s*"
     r"(?=['\"])))(?!\*\*\*)(?!//)" + _VALUE, 0, r"\1" + MASK),
    # ?access_token=v&api_key=v&sig=v
    (lambda low: ("?" in low or "&" in low) and "=" in low,
     r"(?i)([?&](?:[\w.-]*" + _SECRET_WORD + r"[\w.-]*|sig|key|code)=)(?!\*\*\*)[^&\s'\"#]+",
     0, r"\1" + MASK),
    # well-known key formats, wherever they stand
    (_any("sk-", "sk_", "rk-", "rk_", "pk-", "pk_"),
     r"\b(sk|rk|pk)([-_](?:live|test|proj|ant|or|svcacct|admin)(?:[-_][a-z0-9]+)?)?"
     r"[-_](?!\*\*\*)[A-Za-z0-9_-]{16,}", 0, r"\1\2-" + MASK),
    (_any("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "hf_",
          "npm_", "pypi-"),
     r"\b(gh[pousr]_|github_pat_|glpat-|xox[abposr]-|hf_|npm_|pypi-)(?!\*\*\*)"
     r"[A-Za-z0-9_-]{16,}", 0, r"\1" + MASK),
    (_any("akia", "asia", "agpa", "aida", "aroa", "anpa"),
     r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b", 0, "AKIA" + MASK),
    (_any("aiza"), r"\bAIza[0-9A-Za-z_-]{30,}", 0, "AIza" + MASK),
    (_any("ya29."), r"\bya29\.[0-9A-Za-z_-]{16,}", 0, "ya29." + MASK),
    (_any("sg."), r"\bSG\.[0-9A-Za-z_-]{16,}\.[0-9A-Za-z_-]{16,}", 0, "SG." + MASK),
    (_any("eyj"), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", 0,
     "eyJ" + MASK),
]
_compiled: dict[int, re.Pattern[str]] = {}


def redact(text: str) -> str:
    """`text` with every secret it holds (see the module's docstring) replaced by `***`."""
    if not text:
        return text
    low = text.lower()
    for n, (applies, pattern, flags, replacement) in enumerate(_RULES):
        if applies(low):
            rule = _compiled.get(n)
            if rule is None:
                rule = _compiled[n] = re.compile(pattern, flags)
            text = rule.sub(replacement, text)
    return text


def prepare() -> None:
    """Compile every rule now (a process that forks a worker per request: the hooks'
    helper), so no worker compiles them again."""
    for n, (_applies, pattern, flags, _replacement) in enumerate(_RULES):
        if n not in _compiled:
            _compiled[n] = re.compile(pattern, flags)
