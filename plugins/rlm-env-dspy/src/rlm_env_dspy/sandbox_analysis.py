"""DSPy and code-quality analysis of Python files, run INSIDE the sandbox.

This module is standard library only: its source text is sent into the sandbox's Python and executed there
(``analyze([...])`` is then called), so it must not import anything of rlm. It never runs the analysed files:
it reads them with ``ast``. When ``dspy`` is importable in the sandbox, it is imported (lazily, inside a try)
to report the installed version and to check that every ``dspy.X`` the code names exists in that version.

``analyze(paths)`` returns JSON data::

    {"score": 0-100, "dspy_version": "3.4.1" | None,
     "files": [{"path", "score", "dspy", "signatures", "modules", "predictors",
                "findings": [{"line", "kind", "message", "points"}]}],
     "reasons": ["qa.py:12: -3 ...", ...], "notes": [...], "summary": {...}}

Scoring is explainable: every file starts at 100 and each finding with negative ``points`` takes them off (the
file's score never goes below 0); a file that does not parse scores 0. The overall score is the mean of the
file scores, and ``reasons`` lists every point lost (``path:line: -N message``). Findings with 0 points are
advice only. Finding kinds: ``syntax_error``, ``removed_api``, ``deprecated_api``, ``legacy_api``,
``misused_api``, ``signature``, ``module``, ``style`` and ``quality`` (the plain-Python rules, applied to
every file, DSPy or not).

The removed and deprecated names were checked against DSPy's own source (2.4.12, 2.5.43, 2.6.0, 2.6.27,
3.0.0 ... 3.3.1 tags and the 3.4.1 release): see ``REMOVED``, ``REMOVED_MODULES``, ``DEPRECATED``, ``LEGACY``
and ``BROKEN`` below. With dspy importable, a name the table calls removed but the installed version still has
costs less (``removed_still_present``), and a deprecated one it no longer has costs the removed price.
"""

import ast
import os
from typing import Any, Optional

ANALYSIS_VERSION = 1

# ----------------------------------------------------------------------------------------------------------
# What changed in DSPy (checked against its source; "since" is the first release without / warning about it)
# ----------------------------------------------------------------------------------------------------------

_LM_HINT = "use dspy.LM('provider/model') (e.g. dspy.LM('openai/gpt-4o-mini'), dspy.LM('ollama_chat/llama3'))"
_RM_HINT = "use dspy.retrievers.Embeddings or a plain search function called from forward()"
_LM_CLIENTS = (
    "OpenAI", "AzureOpenAI", "MultiOpenAI", "OllamaLocal", "Mistral", "Databricks", "Cohere", "Clarifai",
    "CloudflareAI", "Google", "GoogleVertexAI", "GROQ", "Snowflake", "Claude", "HFClientTGI", "HFClientVLLM",
    "HFClientSGLang", "HFServerTGI", "ChatModuleClient", "Anyscale", "Together", "HFModel", "LlamaCpp",
    "Bedrock", "Sagemaker", "AWSModel", "AWSMistral", "AWSAnthropic", "AWSMeta", "Watsonx", "PremAI",
)

#: dspy.<name> that no longer exists: name -> (removed in, what to use instead)
REMOVED = {}
for _name in _LM_CLIENTS:
    REMOVED[_name] = ("2.6", "the per-provider LM clients were replaced by dspy.LM: " + _LM_HINT)
for _name in ("Pyserini", "ColBERTv2RerankerLocal", "ColBERTv2RetrieverLocal", "You"):
    REMOVED[_name] = ("2.6", _RM_HINT)
for _name in ("TypedPredictor", "TypedChainOfThought", "functional", "FunctionalModule", "predictor", "cot"):
    REMOVED[_name] = ("2.6", "dspy.functional is gone: dspy.Predict / dspy.ChainOfThought with a class-based "
                             "Signature whose fields are typed give typed outputs")
for _name in ("Assert", "Suggest", "assert_transform_module", "backtrack_handler", "assertions"):
    REMOVED[_name] = ("2.6", "DSPy assertions are gone: use dspy.Refine or dspy.BestOfN with a reward function")
REMOVED["Retry"] = ("2.6", "use dspy.Refine or dspy.BestOfN")
REMOVED["MIPRO"] = ("2.6", "use dspy.MIPROv2")
REMOVED["SignatureOptimizer"] = ("2.6", "use dspy.COPRO")
REMOVED["BayesianSignatureOptimizer"] = ("2.6", "use dspy.MIPROv2")
REMOVED["Teleprompter"] = ("2.6", "no longer exported at the top level: dspy.teleprompt.Teleprompter")
REMOVED["ChainOfThoughtWithHint"] = ("3.0", "use dspy.ChainOfThought with an explicit `hint` InputField")
REMOVED["Program"] = ("3.0", "use dspy.Module")
REMOVED["retrieve"] = ("3.0", "the dspy.retrieve package (third-party RM clients) is gone: " + _RM_HINT)

#: whole modules that are gone: module path -> (removed in, what to use instead)
REMOVED_MODULES = {
    "dsp": ("2.6", "the separate `dsp` package was folded into dspy: use dspy.LM, dspy.settings, dspy.Example"),
    "dspy.functional": REMOVED["functional"],
    "dspy.retrieve": REMOVED["retrieve"],
    "dspy.primitives.assertions": REMOVED["Assert"],
    "dspy.primitives.program": ("3.0", "dspy.Module lives in dspy.primitives.module"),
    "dspy.predict.chain_of_thought_with_hint": REMOVED["ChainOfThoughtWithHint"],
    "dspy.predict.retry": REMOVED["Retry"],
    "dspy.teleprompt.mipro_optimizer": REMOVED["MIPRO"],
    "dspy.teleprompt.signature_opt_bayesian": REMOVED["BayesianSignatureOptimizer"],
}

#: dspy.<name> that still works but warns: name -> (deprecated since, message, points)
DEPRECATED = {
    "ProgramOfThought": ("3.3", "deprecated (DeprecationWarning), to be removed in 3.5: use dspy.RLM", -8),
    "CodeAct": ("3.3", "deprecated (DeprecationWarning), to be removed in 3.5: use dspy.RLM", -8),
}
#: dspy.<name> that works without a warning but is the old way
LEGACY = {
    "Retrieve": ("dspy.Retrieve needs dspy.settings.rm, for which DSPy 3 ships almost no clients: "
                 + _RM_HINT, -3),
}
#: names that exist but cannot be used: name -> message (looked for at the end of any dspy path)
BROKEN = {
    "AvatarOptimizer": "dspy.AvatarOptimizer cannot be built in DSPy 2.6 to 3.4: its __init__ calls "
                       "dspy.TypedPredictor, which was removed (AttributeError); use dspy.GEPA, dspy.MIPROv2 or "
                       "dspy.SIMBA",
    "Avatar": "dspy.predict.avatar.Avatar cannot be built in DSPy 2.6 to 3.4: its __init__ calls "
              "dspy.TypedPredictor, which was removed (AttributeError); use dspy.ReAct",
}
#: removed class names also looked for at the end of deeper paths (dspy.predict.ChainOfThoughtWithHint)
_MOVED_CLASS_NAMES = tuple(n for n in REMOVED if n[:1].isupper() and n not in ("Teleprompter",))
#: methods that were removed from dspy.Module
REMOVED_METHODS = {"activate_assertions": ("2.6", REMOVED["Assert"][1])}
#: InputField/OutputField arguments deprecated since 3.2 (they have no effect)
DEPRECATED_FIELD_ARGS = ("prefix", "format", "parser")

PREDICTORS = (
    "Predict", "ChainOfThought", "ReAct", "ReActV2", "ProgramOfThought", "CodeAct", "MultiChainComparison",
    "BestOfN", "Refine", "Parallel", "KNN", "RLM", "Flex", "ChainOfThoughtWithHint", "TypedPredictor",
    "TypedChainOfThought", "Retry",
)
#: predictors whose call takes keyword arguments only (dspy.Predict raises ValueError on positional ones)
KEYWORD_ONLY_PREDICTORS = ("Predict", "ChainOfThought", "ReAct", "ReActV2", "ProgramOfThought", "CodeAct", "RLM")
SIGNATURE_FACTORIES = ("Signature", "make_signature", "ensure_signature")
#: attributes dspy builds lazily (module __getattr__): accepted without touching them
_LAZY_DSPY_NAMES = ("cache",)

POINTS = {
    "removed": -15, "removed_still_present": -8, "unknown": -10, "positional_predictor_call": -10,
    "bare_annotation": -10, "no_inputs": -10, "no_outputs": -10, "malformed_string_signature": -10,
    "signature_docstring": -5, "field_desc": -3, "field_untyped": -3, "field_deprecated_arg": -2,
    "string_signature": -5, "typed_string_signature": -3, "string_signature_cap": -15,
    "no_forward": -20, "no_lm_call": -10, "unused_submodule": -5, "forward_returns_nothing": -5,
    "direct_forward_call": -3, "legacy_lm_forward": -5, "openai_messages": -3, "settings_configure": -2,
    "module_docstring": -2, "public_docstring": -3, "public_docstring_cap": -15, "bare_except": -3,
    "bare_except_cap": -9, "star_import": -3, "mutable_default": -3, "mutable_default_cap": -9,
    "unused_import": -1, "unused_import_cap": -5,
}

_SKIPPED_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache",
                 ".ruff_cache", "build", "dist", ".tox", ".eggs"}


# ----------------------------------------------------------------------------------------------------------
# Public entry points
# ----------------------------------------------------------------------------------------------------------


def analyze(paths, use_installed_dspy=True):
    """Analyse ``paths`` (``.py`` files, or folders searched for them, relative to the working directory).

    ``use_installed_dspy``: import dspy (when it can be) for its version and the misused-API check."""
    dspy_module, dspy_version, why_not = _load_dspy() if use_installed_dspy else (None, None, "")
    notes = []
    if dspy_module is None:
        notes.append(("dspy is not importable here (" + why_not + ")" if why_not else "dspy was not imported")
                     + ": removed/deprecated names were checked against the built-in table (DSPy 3.4), "
                     "the misused-API check was skipped")
    files: list[dict[str, Any]] = []
    skipped: list[str] = []
    for path in _expand(paths, skipped):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                source = handle.read()
        except OSError as exc:
            files.append(_unreadable(path, exc))
            continue
        files.append(analyze_source(source, path, dspy_module=dspy_module, dspy_version=dspy_version))
    for path in skipped:
        notes.append("skipped " + path + " (not a .py file)")
    return _report(files, dspy_version, notes)


def analyze_source(source, path="<source>", dspy_module=None, dspy_version=None):
    """The analysis of one file's text: the per-file dict of ``analyze``."""
    return _FileAnalysis(source, path, dspy_module, dspy_version).run()


def _report(files, dspy_version, notes):
    reasons = []
    if not files:
        reasons.append("no Python files to analyse: score 0")
        score = 0
    else:
        score = int(round(sum(f["score"] for f in files) / float(len(files))))
        if len(files) > 1:
            parts = ", ".join(f["path"] + " " + str(f["score"]) for f in files)
            reasons.append("score " + str(score) + " = mean of " + str(len(files)) + " file scores (" + parts + ")")
    for f in files:
        for finding in f["findings"]:
            if finding["points"] < 0:
                reasons.append("%s:%s: %d %s" % (f["path"], finding["line"], finding["points"], finding["message"]))
    summary: dict[str, Any] = {
        "files": len(files),
        "dspy_files": sum(1 for f in files if f.get("dspy")),
        "class_signatures": sum(1 for f in files for s in f["signatures"] if s["style"] == "class"),
        "string_signatures": sum(1 for f in files for s in f["signatures"] if s["style"] == "string"),
        "modules": sum(len(f["modules"]) for f in files),
        "predictors": {},
        "findings": {},
    }
    for f in files:
        for p in f["predictors"]:
            summary["predictors"][p["name"]] = summary["predictors"].get(p["name"], 0) + 1
        for finding in f["findings"]:
            summary["findings"][finding["kind"]] = summary["findings"].get(finding["kind"], 0) + 1
    return {"score": score, "dspy_version": dspy_version, "analysis_version": ANALYSIS_VERSION, "files": files,
            "reasons": reasons, "notes": notes, "summary": summary}


def _load_dspy():
    try:
        import dspy  # noqa: PLC0415 - lazily: the sandbox may not have it
    except Exception as exc:  # ImportError, or a broken install
        return None, None, type(exc).__name__ + ": " + str(exc)[:200]
    version = getattr(dspy, "__version__", None)
    return dspy, (str(version) if version is not None else None), ""


def _expand(paths, skipped):
    if isinstance(paths, str):
        paths = [paths]
    found = []
    for path in paths or []:
        path = str(path)
        if os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
                for name in sorted(names):
                    if name.endswith(".py"):
                        found.append(os.path.normpath(os.path.join(root, name)))
        elif path.endswith(".py") or not os.path.exists(path):
            found.append(path)
        else:
            skipped.append(path)
    unique = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


def _unreadable(path, exc):
    finding = {"line": 0, "kind": "syntax_error", "points": -100,
               "message": "cannot read the file (" + type(exc).__name__ + ": " + str(exc)[:160] + ")"}
    return {"path": path, "score": 0, "dspy": False, "signatures": [], "modules": [], "predictors": [],
            "findings": [finding]}


# ----------------------------------------------------------------------------------------------------------
# One file
# ----------------------------------------------------------------------------------------------------------


class _FileAnalysis:
    def __init__(self, source, path, dspy_module, dspy_version):
        self.source = source
        self.path = path
        self.dspy = dspy_module
        self.dspy_version = dspy_version
        self.findings = []
        self.signatures = []
        self.modules = []
        self.predictors = []
        self.dspy_aliases = set()  # local names bound to the dspy module
        self.from_imports = {}  # local name -> "dspy.x.y"
        self.imported_names = {}  # every imported local name -> line (for the unused-import rule)
        self.parents = {}
        self.uses_dspy = False
        self.module_class_names = set()

    # -- driver ------------------------------------------------------------------------------------------

    def run(self):
        try:
            tree = ast.parse(self.source, filename=self.path)
        except SyntaxError as exc:
            self.add(exc.lineno or 0, "syntax_error", -100,
                     "syntax error: " + str(exc.msg) + (" (column %s)" % exc.offset if exc.offset else ""))
            return self.result(score=0)
        except (ValueError, RecursionError) as exc:  # e.g. null bytes, absurd nesting
            self.add(0, "syntax_error", -100, "cannot parse: " + str(exc)[:160])
            return self.result(score=0)
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.collect_imports(tree)
        classes = self.classify_classes(tree)
        self.module_class_names = {node.name for node, kind in classes if kind == "module"}
        if self.uses_dspy:
            self.check_dspy_references(tree)
            self.check_string_signatures(tree)
            for node, kind in classes:
                if kind == "signature":
                    self.check_signature(node)
                elif kind == "module":
                    self.check_module(node)
                elif kind == "lm":
                    self.check_custom_lm(node)
            self.check_predictor_calls(tree)
            self.check_lm_messages(tree)
        self.check_quality(tree, {node for node, kind in classes if kind == "signature"})
        return self.result()

    def result(self, score=None):
        if score is None:
            score = max(0, 100 + sum(f["points"] for f in self.findings))
        self.findings.sort(key=lambda f: (f["line"], f["kind"]))
        return {"path": self.path, "score": int(score), "dspy": self.uses_dspy, "signatures": self.signatures,
                "modules": self.modules, "predictors": self.predictors, "findings": self.findings}

    def add(self, line, kind, points, message):
        self.findings.append({"line": int(line or 0), "kind": kind, "message": message, "points": int(points)})

    # -- names ---------------------------------------------------------------------------------------------

    def collect_imports(self, tree):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.imported_names.setdefault(local, node.lineno)
                    if alias.name == "dspy" or alias.name.startswith("dspy."):
                        self.uses_dspy = True
                        if alias.asname and alias.name != "dspy":
                            self.from_imports[alias.asname] = alias.name
                        else:
                            self.dspy_aliases.add(local)
                        self.check_module_path(alias.name, node.lineno)
                    elif alias.name == "dsp" or alias.name.startswith("dsp."):
                        self.uses_dspy = True
                        self.check_module_path(alias.name, node.lineno)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                module = node.module
                if module == "__future__":
                    continue
                for alias in node.names:
                    if alias.name != "*":
                        self.imported_names.setdefault(alias.asname or alias.name, node.lineno)
                if module == "dsp" or module.startswith("dsp."):
                    self.uses_dspy = True
                    self.check_module_path(module, node.lineno)
                    continue
                if not (module == "dspy" or module.startswith("dspy.")):
                    continue
                self.uses_dspy = True
                if self.check_module_path(module, node.lineno):
                    continue
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    full = module + "." + alias.name
                    self.from_imports[alias.asname or alias.name] = full
                    self.check_dspy_name(full, node.lineno, from_import=True)

    def qualname(self, node):
        """'dspy.a.b' for an expression naming something of dspy, else None."""
        if isinstance(node, ast.Name):
            if node.id in self.dspy_aliases:
                return "dspy"
            return self.from_imports.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return base + "." + node.attr if base else None
        return None

    def dspy_name(self, node):
        """The public dspy name an expression refers to ('Predict' for dspy.Predict or
        dspy.predict.predict.Predict), or None."""
        full = self.qualname(node)
        if not full or full == "dspy":
            return None
        return full.rsplit(".", 1)[-1]

    # -- removed, deprecated and unknown dspy names ---------------------------------------------------------

    def check_module_path(self, module, line):
        """Report an import of a removed module; True when it was one."""
        for gone, (since, hint) in REMOVED_MODULES.items():
            if module == gone or module.startswith(gone + "."):
                self.report_removed(gone, since, hint, line, is_module=True)
                return True
        return False

    def check_dspy_references(self, tree):
        seen: dict[str, list[int]] = {}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Attribute, ast.Name)):
                continue
            parent = self.parents.get(node)
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue  # only the outermost chain of dspy.a.b.c
            if isinstance(node, ast.Name) and node.id in self.from_imports:
                continue  # checked at the import
            full = self.qualname(node)
            if not full or full == "dspy":
                continue
            seen.setdefault(full, []).append(node.lineno)
        for full, lines in sorted(seen.items(), key=lambda item: item[1][0]):
            self.check_dspy_name(full, lines[0], also=lines[1:])
        for node in ast.walk(tree):  # module.activate_assertions(), on any object
            if isinstance(node, ast.Attribute) and node.attr in REMOVED_METHODS:
                since, hint = REMOVED_METHODS[node.attr]
                self.add(node.lineno, "removed_api", POINTS["removed"],
                         "." + node.attr + "() was removed from dspy.Module in DSPy " + since + ": " + hint)

    def check_dspy_name(self, full, line, also=(), from_import=False):
        parts = full.split(".")
        if len(parts) < 2:
            return
        top = parts[1]
        where = self.lines_note(also)
        if self.check_module_path(".".join(parts[:-1]) if from_import else full, line):
            return
        if parts[-1] in BROKEN:
            self.add(line, "misused_api", POINTS["unknown"], BROKEN[parts[-1]] + where)
            return
        if len(parts) > 2 and top not in REMOVED and top not in DEPRECATED and parts[-1] in _MOVED_CLASS_NAMES:
            # dspy.predict.ChainOfThoughtWithHint: judged by the installed dspy when there is one
            if self.dspy is None or not self.has_attr_path(parts):
                since, hint = REMOVED[parts[-1]]
                self.add(line, "removed_api", POINTS["removed"],
                         full + " was removed in DSPy " + since + ": " + hint + where)
            return
        if top in REMOVED:
            since, hint = REMOVED[top]
            self.report_removed("dspy." + top, since, hint + where, line)
            return
        if top in DEPRECATED:
            since, message, points = DEPRECATED[top]
            if self.dspy is not None and not self.has_attr_path(["dspy", top]):
                self.add(line, "removed_api", POINTS["removed"],
                         "dspy." + top + " no longer exists in dspy " + str(self.dspy_version) + " (" + message + ")"
                         + where)
            else:
                self.add(line, "deprecated_api", points, "dspy." + top + " is " + message + where)
            return
        if top in LEGACY:
            message, points = LEGACY[top]
            self.add(line, "legacy_api", points, message + where)
            return
        if parts[1:3] == ["settings", "configure"]:
            self.add(line, "style", POINTS["settings_configure"],
                     "dspy.settings.configure(...) is an alias: DSPy 3 code calls dspy.configure(...), and "
                     "dspy.context(...) for a temporary setting" + where)
            return
        if self.dspy is not None:
            missing = self.missing_part(parts)
            if missing:
                self.add(line, "misused_api", POINTS["unknown"],
                         missing + " does not exist in the installed dspy " + str(self.dspy_version) + where)

    def report_removed(self, name, since, hint, line, is_module=False):
        present = self.dspy is not None and self.has_attr_path(name.split(".")) and not is_module
        if present:
            self.add(line, "deprecated_api", POINTS["removed_still_present"],
                     name + " was removed in DSPy " + since + " (still present in the installed "
                     + str(self.dspy_version) + "): " + hint)
        else:
            self.add(line, "removed_api", POINTS["removed"],
                     name + (" (module)" if is_module else "") + " was removed in DSPy " + since + ": " + hint)

    @staticmethod
    def lines_note(lines):
        lines = sorted(set(lines))
        if not lines:
            return ""
        return " (also line" + ("s " if len(lines) > 1 else " ") + ", ".join(str(n) for n in lines[:8]) + \
               (", ..." if len(lines) > 8 else "") + ")"

    def has_attr_path(self, parts):
        return self.missing_part(parts) is None

    def missing_part(self, parts):
        """None when dspy.a.b... resolves in the installed dspy, else the first dotted prefix that does not."""
        import importlib  # noqa: PLC0415

        obj = self.dspy
        for index in range(1, len(parts)):
            if not isinstance(obj, (type, type(os))):
                return None  # an instance (dspy.settings, a function...): its attributes are runtime values
            name = parts[index]
            prefix = ".".join(parts[: index + 1])
            if index == 1 and name in _LAZY_DSPY_NAMES:
                return None
            try:
                if isinstance(obj, type(os)) and name in getattr(obj, "__dict__", {}):
                    obj = obj.__dict__[name]
                    continue
                if hasattr(obj, name):
                    obj = getattr(obj, name)
                    continue
                if isinstance(obj, type) and _declared_field(obj, name):
                    return None  # a pydantic / dataclass field: an instance attribute
            except Exception:  # a property that fails: it exists
                return None
            if isinstance(obj, type(os)):
                try:
                    obj = importlib.import_module(prefix)
                    continue
                except ModuleNotFoundError as exc:
                    if exc.name and exc.name != prefix and not prefix.startswith(exc.name + "."):
                        return None  # the module exists but needs an optional dependency
                    return prefix
                except Exception:
                    return None  # it exists but fails to import here: not the code's fault
            return prefix
        return None

    # -- signatures ----------------------------------------------------------------------------------------

    def classify_classes(self, tree):
        """[(ClassDef, 'signature' | 'module' | 'lm' | None)] for every class of the file."""
        classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        kinds: dict[str, Optional[str]] = {}
        changed = True
        while changed:
            changed = False
            for node in classes:
                if node.name in kinds and kinds[node.name]:
                    continue
                kind = None
                for base in node.bases:
                    name = self.dspy_name(base)
                    if name == "Signature":
                        kind = "signature"
                    elif name in ("Module", "Program") or name in PREDICTORS:
                        kind = "module"
                    elif name in ("BaseLM", "LM"):
                        kind = "lm"
                    elif isinstance(base, ast.Name) and kinds.get(base.id):
                        kind = kinds[base.id]
                    if kind:
                        break
                if kind and kinds.get(node.name) != kind:
                    kinds[node.name] = kind
                    changed = True
        return [(node, kinds.get(node.name)) for node in classes]

    def field_call(self, value):
        """'input' / 'output' when ``value`` is a dspy.InputField(...)/OutputField(...) call."""
        if isinstance(value, ast.Call):
            name = self.dspy_name(value.func)
            if name == "InputField":
                return "input"
            if name == "OutputField":
                return "output"
        return None

    def check_signature(self, node):
        record = {"name": node.name, "line": node.lineno, "style": "class", "docstring": bool(ast.get_docstring(node)),
                  "inputs": [], "outputs": [], "typed": True}
        if not record["docstring"]:
            self.add(node.lineno, "signature", POINTS["signature_docstring"],
                     "Signature " + node.name + " has no docstring (it becomes the task instructions the LM sees)")
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                name = stmt.target.id
                kind = self.field_call(stmt.value)
                if kind is None:
                    if self.is_classvar(stmt.annotation):
                        continue
                    self.add(stmt.lineno, "signature", POINTS["bare_annotation"],
                             "Signature " + node.name + " field '" + name + "' is annotated but not declared with "
                             "dspy.InputField()/dspy.OutputField(): DSPy 3 fails when the class is created")
                    continue
                self.check_field(node.name, name, stmt.value, stmt.annotation, kind, record)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                kind = self.field_call(stmt.value)
                if kind is not None:
                    self.check_field(node.name, stmt.targets[0].id, stmt.value, None, kind, record)
        inherits = any(not (self.dspy_name(base) == "Signature") for base in node.bases)
        if not inherits:
            if not record["inputs"]:
                self.add(node.lineno, "signature", POINTS["no_inputs"], "Signature " + node.name + " has no InputField")
            if not record["outputs"]:
                self.add(node.lineno, "signature", POINTS["no_outputs"],
                         "Signature " + node.name + " has no OutputField: nothing for the LM to produce")
        record["typed"] = all(f["type"] for f in record["inputs"] + record["outputs"])
        self.signatures.append(record)

    def is_classvar(self, annotation):
        text = _source_of(annotation)
        return "ClassVar" in text

    def check_field(self, owner, name, call, annotation, kind, record):
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        desc = keywords.get("desc", keywords.get("description"))
        has_desc = desc is not None and not (isinstance(desc, ast.Constant) and not str(desc.value or "").strip())
        field = {"name": name, "type": _source_of(annotation) if annotation is not None else None,
                 "desc": desc.value if isinstance(desc, ast.Constant) and isinstance(desc.value, str) else
                 (_source_of(desc) if desc is not None else None)}
        record["inputs" if kind == "input" else "outputs"].append(field)
        label = "Signature " + owner + " " + kind + " field '" + name + "'"
        if annotation is None:
            self.add(call.lineno, "signature", POINTS["field_untyped"],
                     label + " has no type annotation (DSPy assumes str; `" + name + ": str = ...` states it)")
        if not has_desc:
            self.add(call.lineno, "signature", POINTS["field_desc"],
                     label + " has no desc=\"...\" (the LM sees only its name)")
        for arg in DEPRECATED_FIELD_ARGS:
            if arg in keywords:
                self.add(call.lineno, "deprecated_api", POINTS["field_deprecated_arg"],
                         label + " passes " + arg + "=, deprecated since DSPy 3.2 and without effect")

    def check_string_signatures(self, tree):
        spent = 0
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = self.dspy_name(node.func)
            if name not in PREDICTORS and name not in SIGNATURE_FACTORIES:
                continue
            arg = node.args[0] if node.args else None
            for keyword in node.keywords:
                if keyword.arg == "signature":
                    arg = keyword.value
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                continue
            text = arg.value
            parsed = _parse_string_signature(text)
            if parsed is None:
                self.add(node.lineno, "misused_api", POINTS["malformed_string_signature"],
                         "string signature " + repr(text[:60]) + " is malformed: expected 'in1, in2 -> out1, out2'")
                continue
            inputs, outputs = parsed
            typed = all(t for _, t in inputs + outputs)
            self.signatures.append({
                "name": text, "line": node.lineno, "style": "string", "docstring": False, "typed": typed,
                "inputs": [{"name": n, "type": t, "desc": None} for n, t in inputs],
                "outputs": [{"name": n, "type": t, "desc": None} for n, t in outputs],
            })
            points = POINTS["typed_string_signature"] if typed else POINTS["string_signature"]
            points = max(points, POINTS["string_signature_cap"] - spent)
            spent += points
            message = ("string signature " + repr(text[:60]) + " in dspy." + name + "(...): fine for a prototype; "
                       "a class-based dspy.Signature with typed fields, desc= and a docstring says more")
            if points == 0:
                message += " (the string-signature deduction is capped at %d)" % POINTS["string_signature_cap"]
            self.add(node.lineno, "signature", points, message)

    # -- modules -------------------------------------------------------------------------------------------

    def check_module(self, node):
        methods = {stmt.name: stmt for stmt in node.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))}
        forward = methods.get("forward") or methods.get("aforward")
        record = {"name": node.name, "line": node.lineno, "has_forward": forward is not None,
                  "submodules": [], "predictors": []}
        init = methods.get("__init__")
        submodules = {}
        for method in methods.values():
            for stmt in ast.walk(method):
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    for target in targets:
                        attr = _self_attr(target)
                        if attr and self.builds_module(stmt.value) and attr not in submodules:
                            submodules[attr] = stmt.lineno
                            record["submodules"].append(attr)
                            name = self.constructed_predictor(stmt.value)
                            if name:
                                record["predictors"].append({"attr": attr, "predictor": name})
        if init is not None and not _calls_super_init(init):
            self.add(init.lineno, "module", 0,
                     "Module " + node.name + ".__init__ does not call super().__init__() (DSPy 3's metaclass "
                     "covers it, but it is still the documented pattern)")
        if forward is None:
            self.add(node.lineno, "module", POINTS["no_forward"],
                     "Module " + node.name + " defines no forward(): calling it fails")
        else:
            if not any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(forward)):
                self.add(forward.lineno, "module", POINTS["forward_returns_nothing"],
                         "Module " + node.name + "." + forward.name + "() returns nothing: return the "
                         "dspy.Prediction (or the sub-module's result)")
            used = set()
            for name, method in methods.items():
                if name == "__init__":
                    continue
                for sub in ast.walk(method):
                    attr = _self_attr(sub)
                    if attr and isinstance(getattr(sub, "ctx", None), ast.Load):
                        used.add(attr)
            for attr, line in submodules.items():
                if attr not in used:
                    self.add(line, "module", POINTS["unused_submodule"],
                             "Module " + node.name + " builds self." + attr + " but never uses it outside __init__")
            if not self.calls_something(methods, submodules):
                self.add(forward.lineno, "module", POINTS["no_lm_call"],
                         "Module " + node.name + " has no predictor or sub-module call: its forward() never "
                         "reaches an LM")
            for sub in ast.walk(node):
                if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "forward"
                        and _self_attr(sub.func.value)):
                    self.add(sub.lineno, "misused_api", POINTS["direct_forward_call"],
                             "self." + _self_attr(sub.func.value) + ".forward(...) is called directly: call "
                             "self." + _self_attr(sub.func.value) + "(...) (DSPy 3 logs a warning and skips callbacks)")
        self.modules.append(record)

    def builds_module(self, value):
        """Whether an assigned value builds a DSPy module (a predictor, any dspy.X(...) module or a local class)."""
        if isinstance(value, (ast.List, ast.Tuple)):
            return any(self.builds_module(v) for v in value.elts)
        if isinstance(value, ast.ListComp):
            return self.builds_module(value.elt)
        if isinstance(value, ast.Call):
            name = self.dspy_name(value.func)
            if name and (name in PREDICTORS or name in ("Module", "Retrieve") or name[:1].isupper()):
                return name not in ("Example", "Prediction", "LM", "Signature", "InputField", "OutputField",
                                    "History", "Image", "Audio", "Tool")
            if isinstance(value.func, ast.Name) and value.func.id in self.local_module_names():
                return True
        return False

    def constructed_predictor(self, value):
        if isinstance(value, ast.Call):
            name = self.dspy_name(value.func)
            if name in PREDICTORS:
                return name
        return None

    def local_module_names(self):
        return self.module_class_names

    def calls_something(self, methods, submodules):
        for name, method in methods.items():
            if name == "__init__":
                continue
            for sub in ast.walk(method):
                if not isinstance(sub, ast.Call):
                    continue
                func = sub.func
                if _self_attr(func) or (isinstance(func, ast.Attribute) and _self_attr(func.value)):
                    return True  # self.x(...), self.x.y(...)
                if isinstance(func, ast.Subscript) and _self_attr(func.value):
                    return True  # self.steps[0](...)
                if self.dspy_name(func) in PREDICTORS:
                    return True
                if isinstance(func, ast.Name) and func.id in self.local_module_names():
                    return True
        # a loop over sub-modules: for step in self.steps: step(...)
        return any(isinstance(sub, ast.For) and _self_attr(sub.iter) for m in methods.values() for sub in ast.walk(m))

    # -- calls ---------------------------------------------------------------------------------------------

    def check_predictor_calls(self, tree):
        """Predictors called with positional arguments (DSPy raises), and the predictor inventory."""
        predictor_attrs, predictor_names = {}, {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = self.dspy_name(node.func)
                if name in PREDICTORS:
                    self.predictors.append({"name": name, "line": node.lineno})
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                name = self.constructed_predictor(node.value)
                if not name:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if _self_attr(target):
                        predictor_attrs[_self_attr(target)] = name
                    elif isinstance(target, ast.Name):
                        predictor_names[target.id] = name
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            if any(isinstance(a, ast.Starred) for a in node.args):
                continue
            attr = _self_attr(node.func)
            name = predictor_attrs.get(attr) if attr else None
            label = "self." + attr if attr else None
            if name is None and isinstance(node.func, ast.Name):
                name, label = predictor_names.get(node.func.id), node.func.id
            if name is None and isinstance(node.func, ast.Call):  # dspy.Predict(sig)("...")
                name, label = self.constructed_predictor(node.func), "dspy." + str(self.dspy_name(node.func.func))
            if name in KEYWORD_ONLY_PREDICTORS and label is not None:  # label: set with name
                self.add(node.lineno, "misused_api", POINTS["positional_predictor_call"],
                         label + "(...) (a dspy." + name + ") is called with positional arguments: predictors take "
                         "the signature's input fields as keywords only, e.g. " + label + "(question=...)")

    def check_custom_lm(self, node):
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in ("forward", "aforward"):
                self.add(stmt.lineno, "deprecated_api", POINTS["legacy_lm_forward"],
                         "custom LM " + node.name + " overrides BaseLM." + stmt.name + "(): deprecated in DSPy "
                         "3.4, removal planned for 3.5 (implement an engine's complete(Request) and use "
                         "dspy.LM(engine=...))")

    def check_lm_messages(self, tree):
        lm_names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    self.dspy_name(node.value.func) == "LM":
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        lm_names.add(target.id)
                    elif _self_attr(target):
                        lm_names.add("self." + _self_attr(target))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not any(k.arg == "messages" for k in node.keywords):
                continue
            func = node.func
            label = func.id if isinstance(func, ast.Name) else None
            if _self_attr(func):
                label = "self." + _self_attr(func)
            if label in lm_names or (isinstance(func, ast.Call) and self.dspy_name(func.func) == "LM"):
                self.add(node.lineno, "deprecated_api", POINTS["openai_messages"],
                         "an LM called with OpenAI-style messages=: deprecated in DSPy 3.4, removal planned for 3.5 "
                         "(use a predictor, lm('text') or lm(dspy.lm15.Request(...)))")

    # -- plain code quality (every file) -------------------------------------------------------------------

    def check_quality(self, tree, signature_nodes):
        base = os.path.basename(self.path)
        is_test = base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py"
        is_init = base == "__init__.py"
        if not is_test and not (is_init and not tree.body) and tree.body and ast.get_docstring(tree) is None:
            self.add(1, "quality", POINTS["module_docstring"], "the file has no module docstring")
        spent = 0
        if not is_test:
            for node in tree.body:
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                if node.name.startswith("_") or node in signature_nodes or ast.get_docstring(node):
                    continue
                points = max(POINTS["public_docstring"], POINTS["public_docstring_cap"] - spent)
                spent += points
                what = "class" if isinstance(node, ast.ClassDef) else "function"
                self.add(node.lineno, "quality", points, "public " + what + " " + node.name + " has no docstring"
                         + (" (capped)" if points == 0 else ""))
        spent_except = spent_default = 0
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler) and node.type is None:
                points = max(POINTS["bare_except"], POINTS["bare_except_cap"] - spent_except)
                spent_except += points
                self.add(node.lineno, "quality", points, "bare `except:` also catches KeyboardInterrupt and "
                         "SystemExit: name the exception (at least `except Exception:`)")
            elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) and not is_init:
                self.add(node.lineno, "quality", POINTS["star_import"],
                         "`from " + str(node.module) + " import *` hides where names come from")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for default in list(node.args.defaults) + [d for d in node.args.kw_defaults if d is not None]:
                    if isinstance(default, (ast.List, ast.Dict, ast.Set)) or (
                            isinstance(default, ast.Call) and isinstance(default.func, ast.Name)
                            and default.func.id in ("list", "dict", "set") and not default.args):
                        points = max(POINTS["mutable_default"], POINTS["mutable_default_cap"] - spent_default)
                        spent_default += points
                        self.add(default.lineno, "quality", points, "function " + node.name + " has a mutable "
                                 "default argument (shared between calls): default to None")
        if not is_init:
            self.check_unused_imports(tree)

    def check_unused_imports(self, tree):
        used = set()
        exported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == "__all__" and isinstance(node.value,
                                                                                              (ast.List, ast.Tuple)):
                        exported |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                # names used in string annotations ('dspy.Prediction') or doctests count as used
                for word in _identifiers(node.value):
                    used.add(word)
        spent = 0
        for name, line in sorted(self.imported_names.items(), key=lambda item: item[1]):
            if name in used or name in exported or name == "_":
                continue
            points = max(POINTS["unused_import"], POINTS["unused_import_cap"] - spent)
            spent += points
            self.add(line, "quality", points, "`" + name + "` is imported but never used")


# ----------------------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------------------


def _self_attr(node):
    """'x' for ``self.x``, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _declared_field(cls, name):
    try:
        if name in (getattr(cls, "__pydantic_fields__", None) or {}):
            return True
        return any(name in (klass.__dict__.get("__annotations__") or {}) for klass in getattr(cls, "__mro__", ()))
    except Exception:
        return False


def _calls_super_init(function):
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            value = node.func.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
                return True
            if isinstance(value, (ast.Name, ast.Attribute)):
                return True  # dspy.Module.__init__(self) / Base.__init__(self)
    return False


def _source_of(node):
    if node is None:
        return ""
    if hasattr(ast, "unparse"):
        try:
            return ast.unparse(node)
        except Exception:
            pass
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _source_of(node.value) + "." + node.attr
    if isinstance(node, ast.Constant):
        return repr(node.value)
    return type(node).__name__


def _identifiers(text):
    word, words = "", set()
    for char in text + " ":
        if char.isalnum() or char == "_":
            word += char
        else:
            if word and not word[0].isdigit():
                words.add(word)
            word = ""
    return words


def _split_top_level(text):
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _parse_string_signature(text):
    """([(name, type or None)], [(name, type or None)]) of 'a, b: int -> c', or None when malformed."""
    if text.count("->") != 1:
        return None
    left, right = text.split("->")
    sides = []
    for side in (left, right):
        fields = []
        for part in _split_top_level(side):
            name, _, type_ = part.partition(":")
            name, type_ = name.strip(), type_.strip()
            if not name.isidentifier():
                return None
            fields.append((name, type_ or None))
        sides.append(fields)
    if not sides[1]:
        return None
    return sides[0], sides[1]
