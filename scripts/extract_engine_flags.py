#!/usr/bin/env python3
"""Extracts an engine release's command-line flag table (the argparse parser the engine itself
builds) into the JSON data file read by crates/engines.

Usage:
  pip download sglang==0.5.20 --no-deps -d /tmp/w && unzip -q /tmp/w/*.whl 'sglang/*' -d /tmp/x
  python3 scripts/extract_engine_flags.py sglang /tmp/x 0.5.20 SOURCE > crates/engines/tables/sglang-0.5.20.json
  vLLM: pip download vllm==V --no-deps -d /tmp/w && unzip -q /tmp/w/*.whl 'vllm/*.py' -d /tmp/x;
  the venv needs pydantic, transformers and openai (its config classes are pydantic dataclasses)
  python3 scripts/extract_engine_flags.py vllm /tmp/x 0.27.1 SOURCE > crates/engines/tables/vllm-0.27.1.json

The engine's own parser is built (sglang: ServerArgs.add_cli_args on
argparse.ArgumentParser(prog="sglang serve"); vllm: make_arg_parser on FlexibleArgumentParser)
with every module the machine lacks (torch, triton, ...) replaced by a permissive stand-in, so
the flags, their aliases and how many values each takes are argparse's own. SOURCE is where the
code came from (the wheel/sdist name and sha256); the commit is the package's own
`__commit_id__` when it records one.
"""
import argparse
import importlib.abc
import importlib.machinery
import json
import sys
import types


class _Any(types.ModuleType):
    """A module/attribute that is anything: callable, subclassable, iterable (empty)."""

    def __init__(self, name="stub"):
        super().__init__(name)
        self.__path__ = []

    def __getattr__(self, k):
        if k == "__version__":
            return "2.9.0"
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        if self.__name__ == "torch" and k in ("npu", "xpu", "mlu", "musa", "hpu", "mps"):
            raise AttributeError(k)  # a CUDA machine's torch
        v = _make(f"{self.__name__}.{k}")
        setattr(self, k, v)
        return v

    def __call__(self, *a, **k):
        if len(a) == 1 and callable(a[0]) and not k:
            return a[0]  # decorators
        if self.__name__ == "torch.cuda.is_available":
            return True  # a CUDA machine
        return _AnyStr("")

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __mro_entries__(self, bases):
        return (_make_class(self.__name__),)

    def __or__(self, o):
        return self

    __ror__ = __or__
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __or__
    __floordiv__ = __mod__ = __and__ = __rand__ = __neg__ = __or__

    def __getitem__(self, k):
        return self

    def __setitem__(self, k, v):
        pass

    def __int__(self):
        return 0

    __index__ = __int__

    def __float__(self):
        return 0.0

    def __lt__(self, o):
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __len__(self):
        return 0

    def __contains__(self, k):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    __hash__ = types.ModuleType.__hash__


class _AnyStr(str):
    """A call result: an empty string that also has any attribute and can be called."""

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return _AnyStr("")

    def __call__(self, *a, **k):
        return _AnyStr("")

    def __iter__(self):
        return iter(())


def _make_class(name):
    def init_subclass(cls, **kw):
        pass

    return type(
        name.rsplit(".", 1)[-1],
        (),
        {
            "__getattr__": lambda s, k: _make(k),
            "__init_subclass__": classmethod(init_subclass),
            "__init__": lambda s, *a, **k: None,
            # pydantic's class-level calls on a stood-in BaseModel
            "model_rebuild": classmethod(lambda c, *a, **k: None),
            "model_fields": {},
            "__class_getitem__": classmethod(lambda c, k: c),
        },
    )


def _make(name):
    return _Any(name)


# The heavy or GPU-only packages an engine imports while building its parser: stood in for.
# Probed-for optional packages (torch_npu, ...) stay absent, as on a CUDA machine without them.
STUBBED = {
    "torch", "triton", "transformers", "tokenizers", "safetensors", "huggingface_hub",
    "sgl_kernel", "flashinfer", "zmq", "uvloop", "fastapi", "uvicorn", "starlette", "aiohttp",
    "orjson", "pybase64", "setproctitle", "tqdm", "PIL", "einops", "xgrammar", "outlines",
    "llguidance", "partial_json_parser", "openai", "prometheus_client", "interegular",
    "compressed_tensors", "torchvision", "torchaudio", "cuda", "pynvml", "sentencepiece",
    "tiktoken", "blake3", "cbor2", "msgpack", "numba", "ray", "gguf", "mistral_common",
    "cachetools", "cloudpickle", "regex", "yaml", "jinja2", "filelock", "jsonschema",
    "lark", "depyf", "diskcache", "watchfiles", "pyzmq", "setuptools", "vllm_flash_attn",
    "pydantic_core", "cpuinfo", "openai_harmony", "pydantic", "IPython", "datasets", "modelscope", "anthropic", "tilelang", "quack", "apache_tvm_ffi", "tvm_ffi",
}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, real_top):
        self.real_top = real_top

    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        if top == self.real_top or top not in STUBBED:
            return None
        for f in sys.meta_path:
            if f is self:
                continue
            try:
                s = f.find_spec(fullname, path, target)
            except Exception:
                s = None
            if s is not None:
                return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return _Any(spec.name)

    def exec_module(self, m):
        pass


def actions_of(parser):
    out = []
    for a in parser._actions:
        if not a.option_strings:
            out.append({"positional": a.dest, "nargs": _nargs(a)})
            continue
        e = {"flags": list(a.option_strings), "nargs": _nargs(a), "dest": a.dest}
        nf = getattr(a, "new_flag", None)
        if isinstance(nf, str):
            e["deprecated_alias_of"] = nf
        out.append(e)
    return out


def _nargs(a):
    n = a.nargs
    if n is None:
        return 0 if isinstance(a, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                                   argparse._StoreConstAction, argparse._CountAction,
                                   argparse._HelpAction, argparse._VersionAction,
                                   argparse._AppendConstAction)) else 1
    return n if isinstance(n, str) else int(n)


def main():
    engine, root, version, source = sys.argv[1:5]
    # engines log to stdout while importing: keep stdout for the table alone
    out = sys.stdout
    sys.stdout = sys.stderr
    if engine == "vllm":
        # vLLM derives its flags from pydantic dataclasses: the real pydantic is needed
        # and transformers' config classes (install: pip install pydantic transformers)
        STUBBED.difference_update({
            "pydantic", "pydantic_core", "transformers", "tokenizers", "huggingface_hub",
            "safetensors", "regex", "yaml", "filelock", "tqdm", "openai",
        })
    sys.path.insert(0, root)
    if engine == "vllm":
        # a config class's default factory may run code needing the real torch; its default
        # only feeds the help text, so a failing factory gives None (patched in the unpacked
        # copy, never in a repository)
        import pathlib

        au = pathlib.Path(root, "vllm/engine/arg_utils.py")
        text = au.read_text()
        for old in ("default = default.default_factory()", "default = field.default_factory()"):
            fn = old.split(" = ", 1)[1][:-2]
            text = text.replace(old, f"default = _sb_safe({fn})")
        if "_sb_safe" in text and "def _sb_safe" not in text:
            text += "\n\ndef _sb_safe(f):\n    try:\n        return f()\n    except Exception:\n        return None\n"
        au.write_text(text)
        # stood-in types inside pydantic models: validated as "any"
        from pydantic._internal import _generate_schema
        from pydantic_core import core_schema

        _generate_schema.GenerateSchema._unknown_type_schema = (
            lambda self, obj: core_schema.any_schema()
        )
    sys.meta_path.insert(0, _Finder(engine))
    commit = None
    if engine == "sglang":
        import sglang.srt.server_args as sa
        parser = argparse.ArgumentParser(prog="sglang serve")
        sa.ServerArgs.add_cli_args(parser)
        try:
            from sglang import _version
            commit = getattr(_version, "__commit_id__", None)
        except Exception:
            pass
    elif engine == "vllm":
        from vllm.entrypoints.openai.cli_args import make_arg_parser
        from vllm.utils.argparse_utils import FlexibleArgumentParser
        parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
        try:
            from vllm import _version

            c = getattr(_version, "__commit_id__", None)
            commit = c[1:] if isinstance(c, str) and c.startswith("g") else c
        except Exception:
            pass
    else:
        raise SystemExit(f"unknown engine {engine}")
    table = {
        "engine": engine,
        "version": version,
        "source": source,
        "source_commit": commit,
        "prog": parser.prog,
        "allow_abbrev": parser.allow_abbrev,
        "extracted_by": "scripts/extract_engine_flags.py",
        # vLLM's FlexibleArgumentParser rewrites argv (underscores, dotted keys, -O3) first
        "argv_dialect": "vllm-flexible" if engine == "vllm" else None,
        "options": actions_of(parser),
    }
    json.dump(table, out, indent=1)
    out.write("\n")


if __name__ == "__main__":
    main()
