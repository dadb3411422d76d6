#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Builds and runs one consumer of causal the way a user would, in a fresh
temporary folder that is removed afterwards (set CAUSAL_KEEP_TMP=1 to keep it).

usage: run_consumer.py KIND --source-root DIR [--meson MESON] [--cmake CMAKE]
                       [--pkg-config PKGCONFIG] -- CXX [CXX_ARGS...]

KIND is one of
  header_only       compile test/packaging/header_only_wait.cpp with only
                    `CXX -std=c++20 -I<src>/include FILE -pthread` (no
                    -lboost_atomic) and run it
  dropin            the same plain command for examples/01_frontier_basics.cpp,
                    and with `-I<src>/adapters/cpu/include` added (the
                    README's adapter drop-in) for adapters/consumer_cpu.cpp
  pkgconfig         install, then CXX -std=c++20 consumer.cpp $(pkg-config
                    --cflags --libs causal), and each adapters/consumer_X.cpp
                    with causal-X for every adapter installed (cpu and the
                    MPI core always; the CPU one is run, the others linked)
  cmake             install, move the prefix elsewhere (the package must be
                    relocatable), then find_package(causal COMPONENTS cpu
                    OPTIONAL_COMPONENTS vulkan cuda mpi) from
                    test/packaging/cmake_find_package; an unknown component
                    must fail with a message
  meson             install, then test/packaging/meson_consumer, which finds
                    causal and causal-cpu through pkg-config
  meson_subproject  copy the sources to <consumer>/subprojects/causal and
                    build test/packaging/meson_subproject against them
  meson_wrap        the wrap file of README.md, its url pointed at this
                    git checkout (skipped where the source is no checkout),
                    then the same consumer; configuring it must not probe
                    for CUDA, HIP, Vulkan or MPI

"Install" is: meson setup <tmp>/build <src> --prefix=<tmp>/prefix
-Dtests=false -Dexamples=false -Dbenchmarks=disabled --wrap-mode=nodownload,
then meson install. Exits non-zero if any step fails or a check is wrong,
and 77 (skipped) if a tool the consumer needs (cmake, pkg-config) is missing.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CONSUMER_DIR = Path(__file__).resolve().parent
DROPIN_EXAMPLE = Path("examples") / "01_frontier_basics.cpp"
SKIP_EXIT_CODE = 77  # Meson reports it as SKIP


class Failure(Exception):
    """A check failed; the message says which and why."""


class SkipTest(Exception):
    """What the job needs is missing here (exit 77)."""


# Every command runs inside this test's own temporary folder. Tools may
# write scratch files into their working directory (Meson's cmake module runs
# `cmake --system-information`, which uses ./__cmake_systeminformation), and
# consumers running in parallel must not share one.
work_dir: Path = Path.cwd()


def run(command, *, env=None, expect_failure=False):
    command = [str(c) for c in command]
    print("$ " + shlex.join(command), flush=True)
    result = subprocess.run(command, cwd=work_dir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    print(result.stdout, end="", flush=True)
    if expect_failure:
        if result.returncode == 0:
            raise Failure(f"expected failure, but it succeeded: {shlex.join(command)}")
    elif result.returncode != 0:
        raise Failure(f"exit code {result.returncode}: {shlex.join(command)}")
    return result.stdout


def plain_compile_and_run(args, tmp: Path, source: Path, name: str, adapter: str = ""):
    """Compiles `source` with nothing but the drop-in command line (plus the
    adapter's include folder, as the README says), runs it."""
    exe = tmp / name
    includes = ["-I", args.source_root / "include"]
    if adapter:
        includes += ["-I", args.source_root / "adapters" / adapter / "include"]
    command = args.cxx + ["-std=c++20"] + includes + [source, "-o", exe, "-pthread"]
    if any("boost_atomic" in str(part) for part in command):
        raise Failure("the drop-in command line must not link boost_atomic")
    run(command)
    run([exe])


def install(args, tmp: Path) -> Path:
    prefix = tmp / "prefix"
    env = dict(os.environ, CXX=shlex.join(args.cxx))
    run(args.meson + ["setup", tmp / "build", args.source_root, f"--prefix={prefix}",
                      "-Dtests=false", "-Dexamples=false", "-Dbenchmarks=disabled",
                      "--wrap-mode=nodownload"], env=env)
    run(args.meson + ["install", "-C", tmp / "build", "--quiet"])
    expected = [
        prefix / "include" / "causal" / "causal.hpp",
        prefix / "include" / "causal" / "version.hpp",
        prefix / "include" / "causal" / "ext" / "park_word.hpp",
        prefix / "share" / "pkgconfig" / "causal.pc",
    ]
    for path in expected:
        if not path.is_file():
            raise Failure(f"not installed: {path}")
    return prefix


def check_pc_file(pc_file: Path, prefix: Path):
    """The .pc must carry no Boost and no absolute path outside the prefix."""
    text = pc_file.read_text(encoding="utf-8")
    print(f"--- {pc_file}\n{text}---", flush=True)
    for line in text.splitlines():
        if line.startswith(("Cflags:", "Libs:", "Libs.private:", "Requires")):
            if "boost" in line.lower():
                raise Failure(f"{pc_file.name} mentions Boost: {line!r}")
            for token in line.split(":", 1)[1].split():
                path = token[2:] if token[:2] in ("-I", "-L") else token
                if path.startswith("/") and not path.startswith(str(prefix)):
                    raise Failure(f"{pc_file.name} has an absolute path: {line!r}")
    if "${includedir}/causal" in text:
        raise Failure(f"{pc_file.name} puts include/causal on the include path")


# The adapters' consumers: (pkg-config module / CMake component, source,
# whether the packaging tests run it). The device and MPI consumers are only
# built and linked: running needs a GPU or mpiexec.
ADAPTER_CONSUMERS = [
    ("cpu", "consumer_cpu.cpp", True),
    ("vulkan", "consumer_vulkan.cpp", False),
    ("cuda", "consumer_cuda.cpp", False),
    ("mpi", "consumer_mpi.cpp", False),
]


def consumer_pkgconfig(args, tmp: Path):
    prefix = install(args, tmp)
    pc_dir = prefix / "share" / "pkgconfig"
    check_pc_file(pc_dir / "causal.pc", prefix)
    env = dict(os.environ, PKG_CONFIG_PATH=str(pc_dir))
    flags = run(args.pkg_config + ["--cflags", "--libs", "causal"], env=env)
    exe = tmp / "consumer"
    run(args.cxx + ["-std=c++20", CONSUMER_DIR / "consumer.cpp", "-o", exe]
        + shlex.split(flags))
    run([exe])
    # Every adapter the install holds has its own module, which brings the
    # core and the adapter's dependency; the always-built ones must be there.
    for required in ("causal-cpu", "causal-mpi-core"):
        if not (pc_dir / f"{required}.pc").is_file():
            raise Failure(f"not installed: {pc_dir / required}.pc")
    for name, source, runs in ADAPTER_CONSUMERS:
        module = f"causal-{name}"
        if not (pc_dir / f"{module}.pc").is_file():
            print(f"(no {module}.pc: the {name} adapter was not built here)", flush=True)
            continue
        flags = run(args.pkg_config + ["--cflags", "--libs", module], env=env)
        exe = tmp / f"consumer_{name}"
        run(args.cxx + ["-std=c++20", CONSUMER_DIR / "adapters" / source, "-o", exe]
            + shlex.split(flags))
        if runs:
            run([exe])


def consumer_cmake(args, tmp: Path):
    installed = install(args, tmp)
    # Move the install: the package must find its headers relative to itself.
    prefix = tmp / "moved-prefix"
    installed.rename(prefix)
    config = prefix / "share" / "cmake" / "causal"
    for name in ("causalConfig.cmake", "causalConfigVersion.cmake"):
        if not (config / name).is_file():
            raise Failure(f"not installed: {config / name}")

    cmake_args = [f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCMAKE_CXX_COMPILER={args.cxx[-1]}"]
    if len(args.cxx) > 1:  # e.g. a ccache launcher in front of the compiler
        cmake_args.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={';'.join(args.cxx[:-1])}")
    if shutil.which("ninja"):
        cmake_args += ["-G", "Ninja"]
    source = CONSUMER_DIR / "cmake_find_package"

    # The version file must reject an incompatible request...
    run(args.cmake + ["-S", source, "-B", tmp / "cmake-wrong-version",
                      "-DCAUSAL_REQUIRED_VERSION=99.0"] + cmake_args, expect_failure=True)
    # ...an unknown component must fail with a clear message...
    out = run(args.cmake + ["-S", source, "-B", tmp / "cmake-bad-component",
                            "-DCAUSAL_EXTRA_COMPONENT=bogus"] + cmake_args, expect_failure=True)
    if "no such component" not in out:
        raise Failure("find_package(causal COMPONENTS bogus) failed without naming the problem")
    # ...and the real consumer must configure, build and run: the core, the
    # CPU adapter (a required component), and whichever optional adapter
    # components this install and machine have.
    out = run(args.cmake + ["-S", source, "-B", tmp / "cmake-build"] + cmake_args)
    run(args.cmake + ["--build", tmp / "cmake-build"])
    run([tmp / "cmake-build" / "consumer"])
    run([tmp / "cmake-build" / "consumer_cpu"])
    for name, _, _ in ADAPTER_CONSUMERS[1:]:
        built = (tmp / "cmake-build" / f"consumer_{name}").is_file()
        print(f"causal::{name}: {'built' if built else 'not available here'}", flush=True)
    # Where Meson built the Vulkan adapter, CMake finds Vulkan too (the same
    # headers and loader), so the component must have been found.
    if (prefix / "include" / "causal" / "adapters" / "vulkan").is_dir() and \
            not (tmp / "cmake-build" / "consumer_vulkan").is_file():
        raise Failure("the Vulkan adapter is installed, but causal::vulkan was not found")


def consumer_meson(args, tmp: Path):
    prefix = install(args, tmp)
    project = tmp / "consumer"
    project.mkdir()
    shutil.copy(CONSUMER_DIR / "meson_consumer" / "meson.build", project)
    shutil.copy(CONSUMER_DIR / "consumer.cpp", project)
    shutil.copy(CONSUMER_DIR / "adapters" / "consumer_cpu.cpp", project)
    env = dict(os.environ, CXX=shlex.join(args.cxx),
               PKG_CONFIG_PATH=str(prefix / "share" / "pkgconfig"))
    run(args.meson + ["setup", tmp / "consumer-build", project, "--wrap-mode=nodownload"],
        env=env)
    run(args.meson + ["compile", "-C", tmp / "consumer-build"], env=env)
    run([tmp / "consumer-build" / "consumer"])
    run([tmp / "consumer-build" / "consumer_cpu"])


# Dependencies a consumer that asked only for the core and the CPU adapter
# must not make causal look for (Meson logs each lookup as "Run-time
# dependency NAME" or "Dependency NAME").
UNASKED_PROBES = ("dependency cuda", "dependency vulkan", "dependency mpi", "amdhip64",
                  "hip_runtime_api")


def check_no_unasked_probes(log: str):
    for line in log.lower().splitlines():
        if "skipped" in line:  # "Dependency mpi skipped: feature mpi disabled"
            continue
        for probe in UNASKED_PROBES:
            if probe in line:
                raise Failure(f"configuring the consumer probed for something it did not ask for: {line!r}")


def run_subproject_consumer(args, tmp: Path, project: Path, setup_args: list):
    build = tmp / "consumer-build"
    env = dict(os.environ, CXX=shlex.join(args.cxx))
    log = run(args.meson + ["setup", build, project] + setup_args, env=env)
    check_no_unasked_probes(log)
    # As a subproject, causal must not register tests (the consumer has none).
    introspect = subprocess.run(args.meson + ["introspect", "--tests", str(build)],
                                cwd=work_dir, stdout=subprocess.PIPE, text=True, check=True)
    tests = [t["name"] for t in json.loads(introspect.stdout)]
    if tests:
        raise Failure(f"causal registered tests while being a subproject: {tests}")
    run(args.meson + ["compile", "-C", build], env=env)
    run([build / "consumer"])
    run([build / "consumer_cpu"])


def new_subproject_consumer(tmp: Path) -> Path:
    project = tmp / "consumer"
    project.mkdir()
    shutil.copy(CONSUMER_DIR / "meson_subproject" / "meson.build", project)
    shutil.copy(CONSUMER_DIR / "consumer.cpp", project)
    shutil.copy(CONSUMER_DIR / "adapters" / "consumer_cpu.cpp", project)
    return project


def consumer_meson_wrap(args, tmp: Path):
    """The README's wrap file, verbatim except for its url: a wrap-git
    pointing at this checkout's git repository (file://, so no network)."""
    if not (args.source_root / ".git").exists() or shutil.which("git") is None:
        print("SKIP (meson_wrap): the source tree is not a git checkout")
        raise SkipTest()
    readme = (args.source_root / "README.md").read_text(encoding="utf-8")
    start = readme.find("<!-- wrap:causal.wrap -->")
    if start < 0:
        raise Failure("README.md has no wrap file block (<!-- wrap:causal.wrap -->)")
    block = readme[start:].split("```ini\n", 1)[1].split("```", 1)[0]
    lines = []
    for line in block.splitlines():
        if line.startswith("url ="):
            line = f"url = file://{args.source_root}"
        elif line.startswith("revision ="):
            line = "revision = HEAD"
        lines.append(line)
    project = new_subproject_consumer(tmp)
    (project / "subprojects").mkdir()
    (project / "subprojects" / "causal.wrap").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print((project / "subprojects" / "causal.wrap").read_text(encoding="utf-8"), flush=True)
    run_subproject_consumer(args, tmp, project, [])


def ignore_for_subproject_copy(directory: str, names: list[str]) -> list[str]:
    """Skips VCS data, build folders and downloaded subprojects."""
    ignored = [n for n in names if n in (".git", "__pycache__") or n.startswith("build")]
    if Path(directory).name == "subprojects":
        ignored += [n for n in names if not n.endswith(".wrap")]
    return ignored


def consumer_meson_subproject(args, tmp: Path):
    project = new_subproject_consumer(tmp)
    shutil.copytree(args.source_root, project / "subprojects" / "causal",
                    ignore=ignore_for_subproject_copy)
    run_subproject_consumer(args, tmp, project, ["--wrap-mode=nodownload",
                                                 "--force-fallback-for=causal,causal-cpu"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["header_only", "dropin", "pkgconfig", "cmake",
                                         "meson", "meson_subproject", "meson_wrap"])
    parser.add_argument("--source-root", type=Path, required=True)
    parser.add_argument("--meson", default="meson", help="meson command (may hold spaces)")
    parser.add_argument("--cmake", default="cmake")
    parser.add_argument("--pkg-config", dest="pkg_config", default="pkg-config")
    parser.add_argument("cxx", nargs="+", help="the C++ compiler command, after --")
    args = parser.parse_args()
    args.source_root = args.source_root.resolve()
    args.meson = shlex.split(args.meson)
    args.cmake = shlex.split(args.cmake)
    args.pkg_config = shlex.split(args.pkg_config)

    needs = {"cmake": args.cmake, "pkgconfig": args.pkg_config, "meson": args.pkg_config}
    tool = needs.get(args.kind)
    if tool and shutil.which(tool[0]) is None:
        print(f"SKIP ({args.kind}): {tool[0]} is not installed")
        return SKIP_EXIT_CODE

    global work_dir
    tmp = Path(tempfile.mkdtemp(prefix=f"causal-{args.kind}-"))
    work_dir = tmp
    try:
        if args.kind == "header_only":
            plain_compile_and_run(args, tmp, CONSUMER_DIR / "header_only_wait.cpp",
                                  "header_only_wait")
        elif args.kind == "dropin":
            plain_compile_and_run(args, tmp, args.source_root / DROPIN_EXAMPLE, "dropin")
            plain_compile_and_run(args, tmp, CONSUMER_DIR / "adapters" / "consumer_cpu.cpp",
                                  "dropin_cpu", adapter="cpu")
        elif args.kind == "pkgconfig":
            consumer_pkgconfig(args, tmp)
        elif args.kind == "cmake":
            consumer_cmake(args, tmp)
        elif args.kind == "meson":
            consumer_meson(args, tmp)
        elif args.kind == "meson_wrap":
            consumer_meson_wrap(args, tmp)
        else:
            consumer_meson_subproject(args, tmp)
    except Failure as failure:
        print(f"FAIL ({args.kind}): {failure}", flush=True)
        return 1
    except SkipTest:
        return SKIP_EXIT_CODE
    finally:
        if os.environ.get("CAUSAL_KEEP_TMP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"ok ({args.kind})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
