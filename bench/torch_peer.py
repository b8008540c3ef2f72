"""The PyTorch peer at its best: OpenBLAS's kernel choice for this CPU, not the environment's.

Some machines set OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE) in the environment, pinning OpenBLAS
to older kernels (Haswell's AVX2 kernels on an AVX-512 CPU halve its matrix products). A PyTorch
user's machine has no such pin, so every script that times PyTorch calls `configure()` before it
imports torch: it drops both variables for this process and lets OpenBLAS choose. Where
OpenBLAS's own detection does not know the CPU and falls back to a generic core (OpenBLAS 0.3.21
takes a newer Xeon for Prescott, an SSE3 core), it names the best core the CPU's instructions
run (SkylakeX for AVX-512, Haswell for AVX2), as a user tuning PyTorch would. Only the PyTorch
process is changed: kiln's benchmarks, the tests and CI keep the environment as it is.

  python3 bench/torch_peer.py     prints the peer's description (JSON) and exits
"""

import json
import os
import subprocess
import sys

PINNED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# OpenBLAS cores whose kernels use AVX-512, and those that use at least AVX2.
AVX512_CORES = {"SkylakeX", "Cooperlake", "SapphireRapids"}
AVX2_CORES = AVX512_CORES | {"Haswell", "Zen", "SkylakeXAVX2"}
MARK = "KILN_TORCH_PEER"  # set once configure() ran, so a child process keeps the same choice

_PROBE = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
core, config = lib.openblas_get_corename, lib.openblas_get_config
core.restype = config.restype = ctypes.c_char_p
print(json.dumps({"core": core().decode(), "config": config().decode()}))
"""


def openblas_library():
    """The OpenBLAS library that libblas.so.3 resolves to (Debian's alternatives), or None."""
    for directory in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"):
        path = os.path.realpath(os.path.join(directory, "libblas.so.3"))
        if os.path.exists(path):
            return path if "openblas" in path else None
    return None


def probe(library, env):
    """OpenBLAS's core and configuration when loaded with env (in a child process: it reads the
    environment once, when loaded)."""
    out = subprocess.run([sys.executable, "-c", _PROBE, library], env=env, capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


def cpu_flags():
    """The CPU's feature flags from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def best_core(flags):
    """The OpenBLAS core for the widest vector instructions the CPU has, or None."""
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "SkylakeX", AVX512_CORES
    if {"avx2", "fma"} <= flags:
        return "Haswell", AVX2_CORES
    return None, set()


def choose(env=None):
    """The environment for the PyTorch process and a description of the choice (a dict)."""
    env = dict(os.environ if env is None else env)
    removed = {v: env.pop(v) for v in PINNED if v in env}
    info = {"removed": removed, "library": openblas_library(), "set": None}
    if info["library"] is None:
        info["core"] = None
        return env, info
    detected = probe(info["library"], env) or {"core": "unknown", "config": ""}
    info.update(detected_core=detected["core"], config=detected["config"], core=detected["core"])
    target, acceptable = best_core(cpu_flags())
    if target and detected["core"] not in acceptable:
        env["OPENBLAS_CORETYPE"] = target
        chosen = probe(info["library"], env)
        if chosen and chosen["core"] in acceptable:
            info.update(set=target, core=chosen["core"])
        else:
            env.pop("OPENBLAS_CORETYPE")
    return env, info


def describe(info):
    """One line for a table's header: which BLAS and kernels PyTorch ran on."""
    if info["library"] is None:
        return ("PyTorch's BLAS is not OpenBLAS (libblas.so.3 is the reference BLAS): torch.mm and nn.Linear "
                "run on the reference BLAS; install libopenblas0-pthread for the real peer.")
    text = f"PyTorch on {info['config'].split(' NO_')[0] or 'OpenBLAS'} ({info['library']}), kernels: {info['core']}"
    if info["set"]:
        text += (f" (OpenBLAS's own detection chose {info['detected_core']} on this CPU; "
                 f"OPENBLAS_CORETYPE={info['set']} set for the PyTorch process)")
    else:
        text += " (OpenBLAS's own detection)"
    if info["removed"]:
        pins = ", ".join(f"{k}={v}" for k, v in sorted(info["removed"].items()))
        text += f"; the environment's {pins} dropped for the PyTorch process"
    return text + "."


def loaded_core():
    """In a process that imported torch: the OpenBLAS it mapped and its core, or (None, None)."""
    import ctypes  # pylint: disable=import-outside-toplevel

    with open("/proc/self/maps") as f:
        paths = sorted({line.split()[-1] for line in f if "openblas" in line and line.split()[-1].startswith("/")})
    for path in paths:
        try:
            core = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        core.restype = ctypes.c_char_p
        return path, core().decode()
    return None, None


def configure():
    """Applies the choice to this process; call before `import torch`. Returns the description."""
    if os.environ.get(MARK):
        return os.environ[MARK]
    env, info = choose()
    for v in PINNED:
        os.environ.pop(v, None)
    if env.get("OPENBLAS_CORETYPE"):
        os.environ["OPENBLAS_CORETYPE"] = env["OPENBLAS_CORETYPE"]
    os.environ[MARK] = describe(info)
    return os.environ[MARK]


def torch_env(base_env):
    """The environment for a PyTorch child process (base_env with the choice applied and marked)."""
    env, info = choose(base_env)
    env[MARK] = describe(info)
    return env, info


if __name__ == "__main__":
    env, info = choose()
    info["description"] = describe(info)
    print(json.dumps(info, indent=1))
