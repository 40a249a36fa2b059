"""Which external programs the set-up scripts and the test fixtures start, found in their
source: shell scripts (and the Makefile's recipes) parsed by bash itself, Python files by
their syntax tree.

A program is a command word that is not a shell builtin or keyword, not a function of its
script, and not a path into the repository or the cache (``"$cache/bin/helm"``,
``./scripts/...``, a variable): those are built or fetched by the project itself. What is
left must come from the machine, so an install step must provide it unless a minimal
Debian has it (``tests/setup/test_system_programs.py``).

Python: the first element of a command given to ``subprocess``, ``os.exec*``,
``asyncio.create_subprocess_exec`` or to a function of the file that forwards its
``*args`` as one (``run("ip", "link", ...)``), and every ``shutil.which("name")``.
"""
from __future__ import annotations

import ast
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The files that start programs while `make test` sets up and runs: the README's test
# command (the Makefile), what it runs (scripts/, .ci/run), and the tests' own fixtures
# and helpers (including the one shell script a test runs, bench/gpu.sh).
SHELL_FILES = ("Makefile", ".ci/run", "scripts/*.sh", "bench/gpu.sh")
PYTHON_FILES = ("scripts/*.py", "tests/**/*.py")

_SUBPROCESS_CALLS = {"run", "Popen", "check_output", "check_call", "call", "create_subprocess_exec",
                     "execv", "execvp", "execvpe", "execl", "execlp"}
# Words that run their arguments as a command: the program is the next word.
_PREFIXES = {"sudo", "exec", "env", "nohup", "timeout", "nice", "xargs", "flock", "unshare", "nsenter",
             "chroot", "time", "stdbuf", "setsid"}


@dataclass(frozen=True, order=True)
class Start:
    program: str
    where: str  # path:line

    def __str__(self) -> str:
        return f"{self.program} ({self.where})"


def builtins() -> frozenset[str]:
    """bash's own builtins and keywords, asked of bash itself."""
    done = subprocess.run(["bash", "-c", "compgen -b; compgen -k"], capture_output=True, text=True, check=True)
    return frozenset(done.stdout.split())


def files(patterns: tuple[str, ...]) -> list[Path]:
    return sorted({p for pattern in patterns for p in REPO.glob(pattern) if p.is_file()})


def started_programs() -> list[Start]:
    """Every program start found in the shell and Python files above, sorted."""
    found: set[Start] = set()
    for path in files(SHELL_FILES):
        text = path.read_text()
        if path.name == "Makefile":
            text = _makefile_recipes(text)
        found |= set(shell_starts(text, str(path.relative_to(REPO))))
    for path in files(PYTHON_FILES):
        found |= set(python_starts(path.read_text(), str(path.relative_to(REPO))))
    return sorted(found)


# ----------------------------------------------------------------------------------- shell
def _makefile_recipes(text: str) -> str:
    """The recipe lines of a Makefile (tab-indented) as one shell script; ``$(VAR)`` made a
    shell expansion (a variable is never a system program: PY is the project's venv)."""
    recipes = [line[1:] for line in text.splitlines() if line.startswith("\t")]
    return re.sub(r"\$\((\w+)\)", r"${\1}", "\n".join(recipes)) + "\n"


def shell_starts(script: str, name: str) -> list[Start]:
    """The programs a bash script starts (command words; see the module docstring).

    bash parses the script itself: wrapped in a function, ``declare -f`` prints it in
    bash's canonical layout (one command list per line, keywords and operators spaced),
    which is then cut into simple commands here. Positions are reported by the script's
    name and the canonical line's first words, since the layout renumbers lines."""
    canonical = _canonical(script)
    functions = set(re.findall(r"^\s*function (\S+) \(\)", canonical, re.M))
    skip = builtins() | functions
    starts = []
    for line in _without_heredoc_bodies(canonical, keep_terminators=False).splitlines()[2:-1]:
        for words in _simple_commands(line):
            program = _program_of(words)
            if program and program not in skip:
                starts.append(Start(program, f"{name}: {' '.join(words[:4])[:60]}"))
    return starts


def _canonical(script: str) -> str:
    wrapped = f"__script__ () {{\n{_without_heredoc_bodies(script)}\n}}\ndeclare -f __script__\n"
    done = subprocess.run(["bash", "-c", wrapped], check=False, capture_output=True, text=True)
    if done.returncode or not done.stdout.startswith("__script__"):
        raise ValueError(f"bash could not parse the script: {done.stderr.strip()}")
    return done.stdout


_KEYWORDS_BEFORE_A_COMMAND = {"if", "then", "else", "elif", "do", "while", "until", "!", "time", "{", "}"}


def _simple_commands(line: str) -> list[list[str]]:
    """The simple commands of one canonical line: split at ``; && || | ( ) { }`` outside
    quotes; the contents of each ``$(...)`` are commands of their own."""
    commands: list[list[str]] = []
    segment, i, quote = "", 0, None
    while i < len(line):
        c = line[i]
        if quote == "'":
            quote = None if c == "'" else quote
        elif line.startswith("$((", i) or line.startswith("${", i) or (c == "(" and segment.endswith("=")):
            j = _matching(line, i + 1 if c == "$" else i)  # arithmetic, a parameter, an array: one word
            segment += line[i:j]
            i = j
            continue
        elif line.startswith("$(", i):
            depth, j, inner_quote = 1, i + 2, None
            while j < len(line) and depth:
                ch = line[j]
                if inner_quote:
                    inner_quote = None if ch == inner_quote else inner_quote
                elif ch in "'\"" and line[j - 1] != "\\":
                    inner_quote = ch if ch == "'" else None  # "..." nests freely inside $( )
                elif ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                j += 1
            commands += _simple_commands(line[i + 2:j - 1])
            segment += "$SUBST"
            i = j
            continue
        elif c == '"':
            quote = None if quote == '"' else '"'
        elif quote is None and c == "'":
            quote = "'"
        elif quote is None and (c in ";|()" or (c == "&" and line[i - 1:i] not in "<>")
                                or (c in "{}" and _stands_alone(line, i))):
            commands.append(_words(segment))
            segment = ""
            i += 1
            continue
        segment += c
        i += 1
    commands.append(_words(segment))
    out = []
    for command in commands:
        words = command
        while words and words[0] in _KEYWORDS_BEFORE_A_COMMAND:
            words = words[1:]
        if words:
            out.append(words)
    return out


def _matching(line: str, opening: int) -> int:
    """The index after the bracket that closes the one at ``opening`` (quotes ignored)."""
    pairs = {"(": ")", "{": "}"}
    close, depth = pairs[line[opening]], 0
    for j in range(opening, len(line)):
        if line[j] == line[opening]:
            depth += 1
        elif line[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(line)


def _stands_alone(line: str, i: int) -> bool:
    """A ``{``/``}`` of a command group (a word of its own), not one of ``${...}`` or ``a{b}``."""
    before = line[i - 1] if i else " "
    after = line[i + 1] if i + 1 < len(line) else " "
    return before in " \t;" and after in " \t;"


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment)
    except ValueError:
        return segment.split()


def _program_of(words: list[str]) -> str | None:
    """The program a command's words start, or None (an assignment, a variable, a path of ours)."""
    texts = list(words)
    if texts and re.match(r"^\w+\+?=\(", texts[0]):  # NAME=(...): an array, no command
        return None
    while texts and re.match(r"^\w+(\[.*\])?\+?=", texts[0]):  # VAR=value cmd
        texts.pop(0)
    while texts and (texts[0] in _PREFIXES or _is_sudo(texts[0])):
        texts.pop(0)  # sudo/exec/env ... cmd, "${sudo[@]}" cmd, flock 9 (a number: no program)
        while texts and (texts[0].startswith("-") or texts[0].isdigit() or re.match(r"^\w+=", texts[0])):
            texts.pop(0)
    if not texts or texts[0].startswith(("-", "$")):  # a flag, or a program in a variable: ours
        return None
    return _system_program(texts[0])


def _is_sudo(word: str) -> bool:
    """``$SUDO`` / ``"${sudo[@]}"``: sudo when not root, else nothing; the next word is the program."""
    return re.fullmatch(r"\$\{?(sudo|SUDO)(\[@\])?\}?", word) is not None


def _system_program(word: str) -> str | None:
    """``word`` as a system program's name: a bare name, or an absolute path under a system
    directory; None for a path of the project's (relative, or under the cache)."""
    if "/" not in word:
        return word if re.fullmatch(r"[A-Za-z0-9_][\w.+-]*", word) else None
    if re.match(r"^/(usr/)?(local/)?s?bin/[\w.+-]+$", word):
        return word.rsplit("/", 1)[1]
    return None


def _without_heredoc_bodies(script: str, keep_terminators: bool = True) -> str:
    """The script with here-document bodies blanked (they are data, not commands); bash
    needs the terminators to parse it."""
    out, terminator = [], None
    for line in script.splitlines():
        if terminator is not None:
            out.append(line if keep_terminators and line.strip() == terminator else "")
            if line.strip() == terminator:
                terminator = None
            continue
        match = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line.replace("<<<", ""))
        terminator = match.group(1) if match else None
        out.append(line)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------- python
def python_starts(source: str, name: str) -> list[Start]:
    """The programs a Python file starts (see the module docstring)."""
    tree = ast.parse(source)
    runners = _forwarding_functions(tree)
    commands = _command_literals(tree)
    starts = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        callee = _name_of(node.func)
        first = node.args[0]
        words: list[str | None]
        if callee == "which" and isinstance(first, ast.Constant) and isinstance(first.value, str):
            words = [first.value]
        elif callee in runners:
            words = [_first_word(first, commands), *_after_double_dash(first)]
        elif callee and _STARTERS.search(callee):  # s.start("containerd", ["containerd", ...])
            words = [w for arg in node.args if isinstance(arg, (ast.List, ast.Tuple))
                     for w in (_first_word(arg, commands), *_after_double_dash(arg))]
        else:
            continue
        for word in words:
            program = _system_program(word) if word else None
            if program:
                starts.append(Start(program, f"{name}:{node.lineno}"))
    return starts


_STARTERS = re.compile(r"^_?(start|spawn|launch)(_\w+)?$")  # start(), start_process(), not startswith()


def _after_double_dash(command: ast.expr) -> list[str]:
    """``["nsenter", ..., "--", "sh", "-c", ...]``: the program that runs inside."""
    if not isinstance(command, (ast.List, ast.Tuple)):
        return []
    texts = [e.value if isinstance(e, ast.Constant) else None for e in command.elts]
    if not texts or texts[0] not in _RUNS_A_COMMAND or "--" not in texts:
        return []
    after = texts[texts.index("--") + 1:]
    return [after[0]] if after and isinstance(after[0], str) else []


def _name_of(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _first_word(arg: ast.expr, commands: dict[str, str]) -> str | None:
    """The command's first word where the source writes it as a string (or as a tuple
    of strings assigned to a name and unpacked: ``run(*ipt, ...)``)."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value.split()[0] if arg.value.split() else None
    if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name):
        return commands.get(arg.value.id)
    if isinstance(arg, (ast.List, ast.Tuple)) and arg.elts:
        return _first_word(arg.elts[0], commands)
    return None


def _command_literals(tree: ast.Module) -> dict[str, str]:
    """``name = ("iptables", "-w", ...)``: name -> its first string."""
    found = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, (ast.List, ast.Tuple)) and node.value.elts
                and isinstance(node.value.elts[0], ast.Constant) and isinstance(node.value.elts[0].value, str)):
            found[node.targets[0].id] = node.value.elts[0].value
    return found


# Programs that run the rest of their command line as another program.
_RUNS_A_COMMAND = {"ip", "nsenter", "sudo", "env", "chroot", "unshare", "timeout"}


def _forwarding_functions(tree: ast.Module) -> set[str]:
    """The subprocess calls, and the functions of the file that take ``*args`` and hand
    them to one as the program (``run("ip", ...)``, ``self.ns("sysctl", ...)`` through
    ``ip netns exec``), found until no new one appears."""
    runners = set(_SUBPROCESS_CALLS)
    while True:
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.vararg \
                    and node.name not in runners:
                star = node.args.vararg.arg
                if any(isinstance(call, ast.Call) and _name_of(call.func) in runners and call.args
                       and _forwards_a_program(_command_of(call), star) for call in ast.walk(node)):
                    found.add(node.name)
        if not found:
            return runners
        runners |= found


def _command_of(call: ast.Call) -> ast.expr:
    """A runner's command: its first argument, or all of them where they are the words
    themselves (``run("ip", "netns", "exec", ns, *args)``)."""
    first = call.args[0]
    if isinstance(first, ast.Constant) or (len(call.args) > 1 and any(isinstance(a, ast.Starred) for a in call.args)):
        return ast.List(elts=list(call.args), ctx=ast.Load())
    return first


def _forwards_a_program(command: ast.expr, star: str) -> bool:
    """Does this command hand ``*star`` on as a program: first (``list(args)``,
    ``[*args]``), after a program that runs a command (``["ip", "netns", "exec", ns,
    *args]``), or through a helper that builds the command (``*self.in_netns(*args)``)?"""
    if isinstance(command, ast.Call) and _name_of(command.func) in ("list", "tuple") and command.args:
        command = command.args[0]
    if isinstance(command, ast.Name):
        return command.id == star
    if isinstance(command, (ast.List, ast.Tuple)) and command.elts:
        head = command.elts[0]
        if isinstance(head, ast.Constant):
            return head.value in _RUNS_A_COMMAND and _mentions(command, star)
        return _mentions(head, star)
    return _mentions(command, star)


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))
