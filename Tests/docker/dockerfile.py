"""A small Dockerfile reader shared by test_dockerfile.py and run-dockerfile-steps.sh.

Enough of the Dockerfile grammar for this repository's Dockerfile: line continuations,
comments, parser directives, `ARG` substitution in `FROM`, stages, exec-form (JSON) and
shell-form instructions, `ENV k=v ...`. Not a general parser.

Command line (prints shell-safe lines for `eval`, or one value):
    python3 dockerfile.py build      # the `swift build ...` command of the build stage
    python3 dockerfile.py env        # `export K=V` lines of the final stage's ENV
    python3 dockerfile.py healthcheck  # the HEALTHCHECK CMD as a shell-quoted argv
    python3 dockerfile.py entrypoint   # ENTRYPOINT + CMD as a shell-quoted argv
    python3 dockerfile.py stopsignal
    python3 dockerfile.py copies       # `SOURCE DESTINATION` of each COPY --from=build of the final stage
"""

import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

DOCKERFILE = Path(__file__).resolve().parents[2] / "Dockerfile"


@dataclass
class Instruction:
    keyword: str   # upper case
    value: str     # the rest, continuations joined
    line: int      # first line number (1-based)

    def exec_form(self):
        """The JSON array of an exec-form instruction, or None for shell form."""
        text = self.value.strip()
        if not text.startswith("["):
            return None
        try:
            array = json.loads(text)
        except json.JSONDecodeError:
            return None
        return array if isinstance(array, list) and all(isinstance(x, str) for x in array) else None


@dataclass
class Stage:
    image: str
    name: str
    instructions: list = field(default_factory=list)

    def all(self, keyword):
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword):
        found = self.all(keyword)
        return found[-1] if found else None


def instructions(text):
    out, buffer, start = [], "", None
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not buffer):
            continue
        if start is None:
            start = number
        if stripped.endswith("\\"):
            buffer += stripped[:-1] + " "
            continue
        buffer += stripped
        keyword, _, rest = buffer.strip().partition(" ")
        out.append(Instruction(keyword.upper(), rest.strip(), start))
        buffer, start = "", None
    return out


def parse(path=DOCKERFILE):
    """(global ARG defaults, [Stage]) of the Dockerfile at path."""
    args, stages = {}, []
    for ins in instructions(Path(path).read_text()):
        if ins.keyword == "ARG" and not stages:
            name, _, default = ins.value.partition("=")
            args[name.strip()] = default.strip()
        elif ins.keyword == "FROM":
            parts = ins.value.split()
            image = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), ""), parts[0])
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else str(len(stages))
            stages.append(Stage(image, name))
        elif stages:
            stages[-1].instructions.append(ins)
    return args, stages


def env_of(stage):
    env = {}
    for ins in stage.all("ENV"):
        for token in shlex.split(ins.value):
            key, sep, value = token.partition("=")
            if sep:
                env[key] = value
    return env


def build_commands(stages):
    """Every `swift build ...` invocation in RUN lines, split on &&."""
    found = []
    for stage in stages:
        for ins in stage.all("RUN"):
            for part in ins.value.split("&&"):
                part = part.strip()
                if part.startswith("swift build"):
                    found.append(part)
    return found


def build_copies(stage):
    """(source, destination) of each `COPY --from=build` of stage: what the image takes
    from the build stage's /out."""
    found = []
    for ins in stage.all("COPY"):
        parts = ins.value.split()
        if parts and parts[0] == "--from=build" and len(parts) == 3:
            found.append((parts[1], parts[2]))
    return found


def main(argv):
    _, stages = parse()
    final = stages[-1]
    what = argv[1] if len(argv) > 1 else ""
    if what == "build":
        print(build_commands(stages)[0])
    elif what == "env":
        for key, value in env_of(final).items():
            print(f"export {key}={shlex.quote(value)}")
    elif what == "healthcheck":
        value = final.last("HEALTHCHECK").value
        array = Instruction("CMD", value[value.index("CMD") + 3:].strip(), 0).exec_form()
        print(shlex.join(array))
    elif what == "entrypoint":
        entry = final.last("ENTRYPOINT").exec_form() or []
        cmd = (final.last("CMD").exec_form() if final.last("CMD") else None) or []
        print(shlex.join(entry + cmd))
    elif what == "copies":
        for source, destination in build_copies(final):
            print(f"{shlex.quote(source)} {shlex.quote(destination)}")
    elif what == "stopsignal":
        print(final.last("STOPSIGNAL").value if final.last("STOPSIGNAL") else "SIGTERM")
    else:
        print(__doc__, file=sys.stderr)
        return 64
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
