"""Lightning Fabric: `Fabric(...)`'s configuration (strategy, launch, precision hooks),
`setup`/`setup_module`, `mark_forward_method`, `init_module`, `launch`, callbacks.

A mixin of `flow.Solver`: the interpreter (flow.py) calls these methods; they read and write the
solver's tables through it."""

from __future__ import annotations

import ast
import json

from fabric_lsp.analysis.semantics.run_choices import choice_description
from fabric_lsp.analysis.flow_state import (
    _Call,
    _Frame,
    _int_of,
    _NONE,
    _site_key,
    _sort_key,
    ANY_KEY,
    MAX_PARTIAL_DEPTH,
    MAX_SETUP_SITES,
)
from fabric_lsp.analysis.libraries.torch_tables import tables
from fabric_lsp.analysis.values import (
    Choice,
    ConfigNode,
    Bound,
    Class,
    Const,
    const,
    Container,
    FabricValue,
    Function,
    Instance,
    JUST_UNKNOWN,
    LAUNCH_MACHINE,
    Lib,
    LAUNCH_NONE,
    LAUNCH_SCRIPT,
    LAUNCH_SPAWN,
    Marked,
    NOTHING,
    SINGLE,
    Special,
    Strategy,
    StrategyObject,
    UNKNOWN,
    Unknown,
    UNKNOWN_STRATEGY,
    Wrapped,
    WrappedMethod,
    WRAPPING,
)

# Precision values (as Fabric's `precision=` spells them, aliases included) whose plugin overrides
# backward (MixedPrecision) and those whose plugin does not (Precision, HalfPrecision, DoublePrecision,
# TransformerEnginePrecision): lightning/fabric/connector.py _check_and_init_precision.
_HOOKING_PRECISIONS = frozenset(("16-mixed", "bf16-mixed", "16", "bf16", 16))
_PLAIN_PRECISIONS = frozenset(("32-true", "bf16-true", "16-true", "64-true", "32", "64", 32, 64,
                               "transformer-engine", "transformer-engine-float16"))


class FabricSemantics:
    """Lightning Fabric: `Fabric(...)`'s configuration (strategy, launch, precision hooks),
    `setup`/`setup_module`, `mark_forward_method`, `init_module`, `launch`, callbacks."""

    def _fabric_attribute(self, fabric: FabricValue, name: str, library_only: bool = False) -> frozenset:
        if fabric.cls is not None and not library_only:
            owner, values = self.lookup_class_attribute(fabric.cls, name)
            found = set(self.read(("field", fabric.cls, name)))
            if isinstance(owner, Class):
                for value in values:
                    found.update(self._bind_class_value(value, owner, fabric))
                return frozenset(found)
            if found and owner is None:
                return frozenset(found)
        if name in ("setup", "setup_module", "init_module", "launch", "setup_optimizers", "setup_dataloaders",
                    "no_backward_sync", "call") or name in LAUNCH_CHECKED_METHODS:
            return frozenset({Special("fabric_method", fabric, name)})
        if name == "__init__" and library_only:
            return frozenset({Special("fabric_init", fabric)})  # super().__init__(...) in a subclass
        return JUST_UNKNOWN

    def _fabric_names(self, frame: _Frame) -> tuple:
        """The expressions naming a Fabric object where `loss.backward()` is called, for the fix
        `fabric.backward(loss)`: ((text, values), ...), a local or global name or `self.<attribute>`
        whose values are all Fabric objects."""
        found = []
        names = sorted(set(frame.env) | {"fabric"})
        for name in names:
            values = self._lookup(name, frame) if name in frame.env or name == "fabric" else NOTHING
            if values and all(isinstance(v, FabricValue) for v in values):
                found.append((name, values))
        if frame.self_values:
            for attribute in ("fabric", "_fabric"):
                values = self.attribute(frame.self_values, attribute, None, frame)
                if values and all(isinstance(v, FabricValue) for v in values):
                    found.append((f"self.{attribute}", values))
        return tuple(found)

    def _fabric_call(self, fabric: FabricValue, method: str, call: "_Call") -> frozenset:
        frame = call.frame
        if method in LAUNCH_CHECKED_METHODS:
            self._event("fabric_use", call, fabric=fabric, method=method)
        if method == "launch":
            node = call.node if isinstance(call.node, ast.Call) else None
            argument = None
            if node is not None:
                argument = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "function"), None)
            self._event("launch", call, fabric=fabric, functions=call.positional(0) | call.keyword("function"),
                        argument=argument)
        if method in ("setup", "setup_module"):
            site = call.node
            self._setup_sites.add(site)
            if len(self._setup_sites) > MAX_SETUP_SITES and not self.bound_hit:
                self.bound_hit = (
                    f"the value-flow analysis stopped at more than {MAX_SETUP_SITES} fabric.setup() calls "
                    "(counted, a memory bound); findings that depend on values passed between functions are left out"
                )
            modules = call.positional(0) | call.keyword("module")
            if not call.args and not call.keyword("module"):
                modules = JUST_UNKNOWN
            # A model already set up is refused ("A model should be passed only once to the setup
            # method"): a wrapper that reaches here (`agent.actor = fabric.setup_module(agent.actor)`
            # read without order) is no path of a program that runs.
            if any(isinstance(value, Wrapped) for value in modules):
                self._event("setup_again", call, values=modules, fabric=fabric, method=method,
                            local=self._local_argument(call, "module"))
            modules = frozenset(value for value in modules if not isinstance(value, Wrapped))
            self.write(("setup_module", site), modules)
            self.write(("setup_fabric", site), frozenset({fabric}))
            if frame.variant:  # kept per case too: Wrapped values of a case read their own
                self.write(("setup_module", (site, frame.variant)), modules)
                self.write(("setup_fabric", (site, frame.variant)), frozenset({fabric}))
            self._event("setup", call, values=modules, fabric=fabric)
            wrapped = Wrapped(site, frame.scope.path, frame.variant)
            self._carry(frame, frozenset({wrapped}))
            if method == "setup_module":
                return frozenset({wrapped})
            optimizers = [values for starred, values in call.args[1:]]
            open_ = any(starred for starred, _ in call.args[1:])
            extra = len([k for k, _ in call.kwargs if k == "scheduler"])
            if not optimizers and not open_ and not extra:
                return frozenset({wrapped})
            site = (site, "returned")  # (model, *optimizers[, scheduler])
            self.write(("element", site, const(0)), frozenset({wrapped}))
            for index in range(1, len(optimizers) + extra + 1):
                self.write(("element", site, const(index) if not open_ else ANY_KEY), JUST_UNKNOWN)
            self.write(("elements", site), frozenset({wrapped, UNKNOWN}))
            return frozenset({Container(site, frame.scope.path)})
        if method == "setup_dataloaders":
            node = call.node
            nodes = node.args if isinstance(node, ast.Call) else []
            for (starred, values), argument in zip(call.args, nodes):
                if starred:  # `setup_dataloaders(*loaders)`: each element is one argument
                    values = self.iter_values(values)
                self._event("setup_dataloaders", call, values=values, argument=argument, fabric=fabric)
            return JUST_UNKNOWN
        if method == "no_backward_sync":
            values = call.positional(0) | call.keyword("module")
            self._event("no_backward_sync", call, values=values, fabric=fabric)
            return JUST_UNKNOWN
        if method == "setup_optimizers":
            self._event("setup_optimizers", call, fabric=fabric)
            return JUST_UNKNOWN
        if method == "init_module":
            key = ("init_kw", _site_key(call.node, frame.variant))
            self.write(key, call.keyword("empty_init") or frozenset({const(None)}))
            if call.args:
                self.write(key, call.positional(0))
            return frozenset({Special("init_module", fabric, call.node)})
        if method == "call":
            return self._callback_call(fabric, call)
        if method == "launch":
            functions = call.positional(0) | call.keyword("function")
            if not functions:
                return JUST_UNKNOWN
            if call.depth >= MAX_PARTIAL_DEPTH:
                return JUST_UNKNOWN
            inner = _Call(call.node, call.func_expr, [(False, frozenset({fabric}))] + call.args[1:], call.kwargs, frame,
                          call.depth + 1)
            result = NOTHING
            for function in self.ordered(functions):
                result = result | self.call_value(function, inner)
            return result
        return JUST_UNKNOWN

    def _callback_call(self, fabric: FabricValue, call: "_Call") -> frozenset:
        """`fabric.call("on_epoch_end", model=model)`: every callback given as `Fabric(callbacks=...)` that
        has a method of that name gets the other arguments (keywords its signature does not take are left
        out, as Lightning does; _bind_call drops them unless it has **kwargs)."""
        hooks = [v.value for v in call.positional(0) | call.keyword("hook_name") if isinstance(v, Const) and v.kind == "str"]
        if not hooks or fabric.site is None or call.depth >= MAX_PARTIAL_DEPTH:
            return _NONE
        callbacks = set()
        for node in [fabric.site] + [v.extra for v in self.ordered(self.read(("fabric_init", fabric.site)))]:
            given = self.read(("fabric_kw", node, "callbacks"))
            for spread in self.read(("fabric_kw", node, "**")):
                if isinstance(spread, Container):
                    given = given | self.read(("element", spread.site, const("callbacks")))
            for value in given:
                callbacks.update(self.iter_values(frozenset({value})) if isinstance(value, Container) else (value,))
        inner = _Call(call.node, call.func_expr, call.args[1:], [(k, v) for k, v in call.kwargs if k != "hook_name"],
                      call.frame, call.depth + 1)
        for callback in self.ordered(v for v in callbacks if isinstance(v, Instance) and isinstance(v.cls, Class)):
            for hook in hooks:
                for method in self.ordered(self.attribute(frozenset({callback}), hook, None, call.frame)):
                    if isinstance(method, (Bound, Function)) and not (isinstance(method, Bound) and method.function.external):
                        self.call_value(method, inner)
        return _NONE

    def _mark(self, wrapped: Wrapped, call: "_Call") -> None:
        frame = call.frame
        arguments = call.positional(0) | call.keyword("method")
        names = set()
        unknown = False
        for value in arguments:
            if isinstance(value, Const) and value.kind == "str":
                names.add(value.value)
            elif isinstance(value, WrappedMethod):
                names.add(value.name)
            elif isinstance(value, Bound) and not value.function.external:
                names.add(value.function.scope.name)
            elif isinstance(value, Function) and not value.external:
                names.add(value.scope.name)
            else:
                unknown = True
        argument_node = None
        node = call.node
        if isinstance(node, ast.Call):
            argument_node = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "method"), None)
        self._event("mark", call, wrapped=wrapped, arguments=arguments, names=frozenset(names), unknown=unknown,
                    argument=argument_node)
        marks = frozenset(Marked(wrapped, name) for name in names)
        frame.marked = frame.marked | marks
        self._made.update(marks)

    # -- strategies ---------------------------------------------------------------------------------------------
    def _record_fabric_arguments(self, call: "_Call") -> None:
        site = call.node
        self.write(("fabric_call", site), frozenset({Special("fabric_call", None, call.frame.scope.path)}))
        key = _site_key(site, call.frame.variant)
        for name, values in call.kwargs:
            # No value yet is not an unknown value: written as unknown, a run that comes before the
            # caller's would leave it for good. A keyword with no value at the end is unknown
            # (_strategy_from).
            if name is not None:
                self.write(("fabric_kw", key, name), values)
                continue
            # `Fabric(**config)`: the literal keys of the dicts it may be, as they are at this call
            # (what the function wrote into its own dict last); what cannot be told by key is "**".
            if any(isinstance(value, (Container, ConfigNode)) for value in values):
                self.write(("fabric_spread", key), frozenset({const(None)}))  # a dict seen (maybe empty)
            for spread, item in self._expand_kwargs(values, call.frame):
                if spread is None:
                    self.write(("fabric_kw", key, "**"), item)
                else:
                    self.write(("fabric_kw", key, spread), item)
                    self.write(("fabric_spread", key), frozenset({const(spread)}))

    def _record_configured_fabric(self, call: "_Call", keywords: list) -> None:
        """A Fabric a configuration makes (`instantiate(cfg.fabric)`, `_target_: lightning.fabric.Fabric`):
        its keys are the constructor's keywords, as for `Fabric(**config)` of a dict whose keys are seen."""
        site = call.node
        self.write(("fabric_call", site), frozenset({Special("fabric_call", None, call.frame.scope.path)}))
        key = _site_key(site, call.frame.variant)
        self.write(("fabric_configured", key), frozenset({const(True)}))
        for name, values in keywords:
            if name is not None:
                self.write(("fabric_kw", key, name), values)
                self.write(("fabric_spread", key), frozenset({const(name)}))

    def strategy(self, fabric: FabricValue) -> Strategy:
        """The strategy of a Fabric object, from the arguments its constructor got (after the solve);
        for a subclass whose __init__ calls `super().__init__(...)`, from the arguments of that call."""
        if fabric.site is None:
            return Strategy(UNKNOWN_STRATEGY, fabric.origin or "a Fabric passed in", None)
        cached = self._strategies.get((id(fabric.site), fabric.variant))
        if cached is None:
            inits = self.ordered(self.peek(("fabric_init", _site_key(fabric.site, fabric.variant))))
            if not inits:
                cached = self._strategy_from(fabric.site, fabric.path, fabric.variant)
            else:
                cached = _combined([self._strategy_from(v.extra, fabric.path, v.receiver) for v in inits])
            when = self._when(fabric.variant, fabric.path)
            if when:
                cached = cached._replace(when=when)
            self._strategies[(id(fabric.site), fabric.variant)] = cached
        return cached

    def _constructor_keywords(self, node: ast.AST, path: str, variant=None) -> tuple[dict, dict] | None:
        """(keyword -> values, keyword -> its source text) of a Fabric constructor call (after the
        solve); None for `Fabric(**config)` whose keys cannot all be seen."""
        keywords: dict[str, frozenset] = {}
        if self.peek(("fabric_configured", _site_key(node, variant))):  # _record_configured_fabric
            key = _site_key(node, variant)
            texts = {}
            for name in self.ordered(self.peek(("fabric_spread", key))):
                if isinstance(name.value, str):
                    keywords[name.value] = values = self.peek(("fabric_kw", key, name.value)) or JUST_UNKNOWN
                    chosen = [v for v in self.ordered(values) if isinstance(v, Choice)]
                    if chosen:  # what messages show for `devices=...`: the configuration's value and file
                        texts[name.value] = " or ".join(dict.fromkeys(choice_description(c) for c in chosen))
            return keywords, texts
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                name = keyword.arg if keyword.arg is not None else "**"
                keywords[name] = self.peek(("fabric_kw", _site_key(node, variant), name)) or JUST_UNKNOWN
        if "**" in keywords:
            # `Fabric(**config)`: the literal keys of the dicts it may be (_record_fabric_arguments);
            # anything else, or nothing seen at all, is unknown.
            keywords.pop("**")
            key = _site_key(node, variant)
            spread = self.peek(("fabric_spread", key))
            if self.peek(("fabric_kw", key, "**")) or not spread:
                return None
            for name in self.ordered(spread):
                if isinstance(name.value, str):
                    keywords[name.value] = keywords.get(name.value, NOTHING) | self.peek(("fabric_kw", key, name.value))
        texts = {}
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg:
                    texts[keyword.arg] = self.program.segment(path, keyword.value)
        return keywords, texts

    def backward_hook(self, fabric: FabricValue) -> tuple[bool | None, str]:
        """Does `_FabricModule.forward` register a backward hook that raises on `loss.backward()` under
        this Fabric (its strategy or precision plugin overrides backward: mixed precision, FSDP,
        DeepSpeed)? True / False / None (not visible), and the setting that decides, for a message."""
        if fabric.site is None:
            return None, fabric.origin or "a Fabric passed in"
        inits = [(v.extra, v.receiver) for v in self.ordered(self.peek(("fabric_init", _site_key(fabric.site, fabric.variant))))] \
            or [(fabric.site, fabric.variant)]
        verdicts = [self._backward_hook_from(node, fabric.path, variant) for node, variant in inits]
        kinds = {verdict for verdict, _ in verdicts}
        if len(kinds) == 1:
            return verdicts[0]
        return None, " or ".join(text for _, text in verdicts)

    def _backward_hook_from(self, node: ast.AST, path: str, variant=None) -> tuple[bool | None, str]:
        found = self._constructor_keywords(node, path, variant)
        if found is None:
            return None, "a configuration passed as **kwargs"
        keywords, texts = found
        strategies = keywords.get("strategy", frozenset({const("auto")})) or JUST_UNKNOWN
        verdicts = set()
        for value in strategies:
            named = value.value if isinstance(value, Const) and value.kind == "str" else (
                value.name if isinstance(value, StrategyObject) else None)
            if named is None:
                named, overrides = self._strategy_subclass(value)
                if overrides is not False:
                    verdicts.add(overrides)  # True: its own `backward`; None: not a strategy subclass we can read
                    continue
            lowered = named.lower()
            if lowered.startswith(("fsdp", "deepspeed")):
                verdicts.add(True)  # FSDPPrecision / DeepSpeedPrecision override backward, whatever the precision
            elif lowered.startswith("xla"):
                verdicts.add(False)  # XLAPrecision does not
            else:
                verdicts.add("precision")
        strategy_text = f"strategy={texts['strategy']}" if "strategy" in texts else "strategy"
        if verdicts == {True}:
            return True, strategy_text
        if verdicts == {False}:
            return False, strategy_text
        if None in verdicts or True in verdicts or False in verdicts:
            return None, f"a strategy chosen at run time ({strategy_text})"
        if "plugins" in keywords:
            return None, f"plugins={texts.get('plugins', '...')}"  # a precision plugin may be among them
        precisions = keywords.get("precision")
        if precisions is None:
            return False, "the default precision (\"32-true\")"
        literal = [v.value for v in precisions if isinstance(v, Const)] if len(precisions) == 1 else []
        shown = texts.get("precision") or (json.dumps(literal[0]) if literal else "...")  # from a **config dict
        precision_text = f"precision={shown}"
        answers = set()
        for value in precisions:
            raw = value.value if isinstance(value, Const) and value.kind in ("str", "int") else object()
            answers.add(True if raw in _HOOKING_PRECISIONS else False if raw in _PLAIN_PRECISIONS else None)
        if answers == {True}:
            return True, precision_text
        if answers == {False}:
            return False, precision_text
        return None, f"a precision chosen at run time ({precision_text})"

    def _strategy_subclass(self, value) -> tuple[str | None, bool | None]:
        """For an instance of a project class extending a Lightning strategy class (`MyDDP()`): (the
        Lightning class, whether the project classes override `backward`). Lightning hooks the output when
        `is_overridden("backward", strategy, parent=Strategy)` (lightning/fabric/wrappers.py
        `_register_backward_hook`); otherwise the precision plugin decides, chosen as for the class it
        extends (_Connector._check_and_init_precision tests isinstance). None when it cannot be told: a base
        not resolved, or a class that names `precision` (it may give the strategy its own plugin)."""
        if not isinstance(value, Instance) or not isinstance(value.cls, Class) or value.declared is not None:
            return None, None
        if not self._mro_complete(value.cls):
            return None, None
        mro = self.mro(value.cls)
        base = next((ref for ref in mro if isinstance(ref, Lib) and tables().strategy(ref.qualified) is not None), None)
        if base is None:
            return None, None
        overrides = False
        for ref in mro[:mro.index(base)]:
            scope = self.classes.get(ref) if isinstance(ref, Class) and not ref.external else None
            if scope is None:
                return None, None  # a library class between them: what it defines is not read
            passed_on = self._precision_passed_on(scope)
            overrides = overrides or any(isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
                                         and statement.name == "backward" for statement in scope.node.body)
            for node in ast.walk(scope.node):
                names = (getattr(node, "id", None), getattr(node, "attr", None), getattr(node, "arg", None),
                         getattr(node, "name", None) if not isinstance(node, ast.ClassDef) else None)
                if any(name in ("precision", "_precision") for name in names) and id(node) not in passed_on:
                    return None, None
        return tables().strategy(base.qualified).name, overrides

    def _precision_passed_on(self, class_scope) -> set:
        """The nodes of `def __init__(self, ..., precision=None): super().__init__(..., precision=precision)`
        that name `precision` (ids), when every caller leaves it None: the strategy then gets no plugin of
        its own, and Fabric chooses it. Empty otherwise."""
        init = next((c for c in class_scope.children if c.name == "__init__" and c.class_scope is class_scope), None)
        if init is None or not self.peek(("param", init, "precision")) <= {const(None)} \
                or not self.peek(("param", init, "precision")):
            return set()
        allowed = set()
        for node in ast.walk(init.node):
            if isinstance(node, ast.arg) and node.arg == "precision":
                allowed.add(id(node))
            elif isinstance(node, ast.keyword) and node.arg == "precision" and isinstance(node.value, ast.Name) \
                    and node.value.id == "precision":
                allowed.update((id(node), id(node.value)))
        return allowed

    def strategy_names(self, fabric: FabricValue) -> frozenset | None:
        """The strategy names a Fabric is given (`"deepspeed_stage_2"`, `"DeepSpeedStrategy"`; `"auto"`
        when none), after the solve; None when one of them cannot be read."""
        if fabric.site is None:
            return None
        inits = [(v.extra, v.receiver) for v in self.ordered(self.peek(("fabric_init", _site_key(fabric.site, fabric.variant))))] \
            or [(fabric.site, fabric.variant)]
        names = set()
        for node, variant in inits:
            found = self._constructor_keywords(node, fabric.path, variant)
            if found is None:
                return None
            for value in found[0].get("strategy", frozenset({const("auto")})) or JUST_UNKNOWN:
                if isinstance(value, Const) and value.kind == "str":
                    names.add(value.value)
                elif isinstance(value, StrategyObject):
                    names.add(value.name)
                else:
                    return None
        return frozenset(names)

    def _strategy_from(self, node: ast.AST, path: str, variant=None) -> Strategy:
        found = self._constructor_keywords(node, path, variant)
        if found is None:
            return Strategy(UNKNOWN_STRATEGY, "a configuration passed as **kwargs", None)
        keywords, texts = found
        strategy_values = keywords.get("strategy", frozenset({const("auto")})) or JUST_UNKNOWN
        alternatives: list[Strategy] = []
        for value in sorted(strategy_values, key=_sort_key):
            alternatives.append(self._one_strategy(value, keywords, texts, node))
        if len(alternatives) == 1:
            return alternatives[0]
        chosen = [v for v in sorted(strategy_values, key=_sort_key) if isinstance(v, Choice)]
        if chosen and all(isinstance(v, (Choice, Unknown)) for v in strategy_values):
            # `strategy=args.strategy`, `cfg.strategy`: name the option, variable or config value.
            return Strategy(UNKNOWN_STRATEGY, "a strategy chosen at run time: "
                            + " or ".join(dict.fromkeys(choice_description(c) for c in chosen)), None)
        kinds = {a.kind for a in alternatives}
        materializes = {a.materializes for a in alternatives}
        merged_materializes = materializes.pop() if len(materializes) == 1 else None
        how = _merged_how(alternatives)
        launch = _merged_launch(alternatives)
        shown = texts.get("strategy") or " or ".join(
            json.dumps(v.value) if isinstance(v, Const) else "..." for v in sorted(strategy_values, key=_sort_key))
        described = f"strategy={shown}"
        if kinds == {WRAPPING}:
            return Strategy(WRAPPING, described, merged_materializes, how, launch=launch)
        if kinds == {SINGLE}:
            return Strategy(SINGLE, described, merged_materializes, how, launch=launch)
        return Strategy(UNKNOWN_STRATEGY, f"a strategy chosen at run time ({described})", merged_materializes, how,
                        launch=launch)

    def empty_init(self, init_call: ast.AST | None, variant=None):
        """True, False or "maybe": what `init_module(empty_init=...)` was given (after the solve)."""
        values = self.peek(("init_kw", _site_key(init_call, variant))) if init_call is not None else NOTHING
        if not values or values <= {const(False), const(None)}:
            return False
        if values == {const(True)}:
            return True
        return "maybe"

    def _one_strategy(self, value, keywords: dict, texts: dict, node) -> Strategy:
        strategy_text = texts.get("strategy")
        if strategy_text is None and isinstance(value, Const) and value.value != "auto":
            strategy_text = json.dumps(value.value)  # from a **config dict: shown as a literal
        described = f"strategy={strategy_text}" if strategy_text else ""
        named = None
        if isinstance(value, Const) and value.kind == "str":
            named = value.value
        elif isinstance(value, StrategyObject):
            named = value.name
        else:
            return Strategy(UNKNOWN_STRATEGY, f"a strategy chosen at run time (strategy={strategy_text or '...'})", None)
        if described and named not in strategy_text:  # `strategy=strategy`: say which one it is here
            described += f" ({json.dumps(named) if isinstance(value, Const) else named})"
        elif described and isinstance(value, Const) and strategy_text != json.dumps(named) \
                and strategy_text.replace("'", '"') != json.dumps(named):
            described = f"strategy={json.dumps(named)}"  # one value of `"ddp" if args.distributed else "auto"`
        materializes, how = _materializes(named)
        if named != "auto":
            wraps = tables().strategy_wraps(named)
            launch = _launch_of(named, keywords.get("accelerator"))
            if wraps is True:
                return Strategy(WRAPPING, described, materializes, how, launch=launch)
            if wraps is False:
                return Strategy(SINGLE, described, materializes, how, launch=launch)
            return Strategy(UNKNOWN_STRATEGY, described or f"strategy {named!r}", None)
        devices = keywords.get("devices")
        accelerator = keywords.get("accelerator")
        nodes = keywords.get("num_nodes")
        node_counts = {_int_of(v) for v in nodes} if nodes else {1}
        # "auto" selects a single-device strategy, DDP or XLA (_Connector._choose_strategy), whatever the
        # device count: never one that builds on the meta device, so `materializes` is False below.
        if None in node_counts:
            return Strategy(UNKNOWN_STRATEGY, f"num_nodes={texts.get('num_nodes', '...')} chosen at run time", False)
        if max(node_counts) > 1:
            if min(node_counts) > 1:
                return Strategy(WRAPPING, f"num_nodes={texts.get('num_nodes')}", False, launch=LAUNCH_SCRIPT)
            return Strategy(UNKNOWN_STRATEGY, f"num_nodes={texts.get('num_nodes')}", False)
        counts = self._device_counts(devices, accelerator, node, texts)
        if counts is None or None in counts:
            described = f"devices={texts['devices']}" if "devices" in texts else "devices chosen by the machine (devices=\"auto\")"
            return Strategy(UNKNOWN_STRATEGY, described, False, launch=None if "devices" in texts else LAUNCH_MACHINE)
        if min(counts) > 1:
            return Strategy(WRAPPING, f"devices={texts.get('devices')}", False, launch=LAUNCH_SCRIPT)
        if max(counts) > 1:
            return Strategy(UNKNOWN_STRATEGY, f"devices={texts.get('devices')} chosen at run time", False)
        shown = ", ".join(f"{k}={_shown(k, texts, keywords)}" for k in ("accelerator", "devices", "strategy")
                          if _shown(k, texts, keywords)) or "Fabric()"
        return Strategy(SINGLE, shown, False, launch=LAUNCH_NONE)

    def _fixed_display(self, value: Container) -> bool:
        """After the solve: a list/tuple display (no `*`) that nothing extends or shrinks, so its length is
        the number of devices it lists (`devices = [0] if use_cuda else 1`, then `devices=devices`)."""
        site = value.site
        return isinstance(site, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in site.elts) \
            and not self.peek(("element", site, ANY_KEY)) \
            and (isinstance(site, ast.Tuple) or not self._may_shrink_lists(value.path))

    def _device_counts(self, devices, accelerator, node, texts) -> set | None:
        cpu = accelerator is not None and accelerator == frozenset({const("cpu")})
        if devices is None:
            return {1} if cpu else None
        literal = None
        if isinstance(node, ast.Call):
            literal = next((k.value for k in node.keywords if k.arg == "devices"), None)
        if isinstance(literal, (ast.List, ast.Tuple)):
            return {len(literal.elts)}
        displays = _arm_displays(literal)
        counts = set()
        for value in devices:
            if isinstance(value, Container) and (value.site in displays or self._fixed_display(value)):
                counts.add(len(value.site.elts))  # `1 if cpu else [device.index]`: a list of device indices
            elif isinstance(value, Const):
                raw = value.value
                if raw in ("auto", -1, "-1"):
                    counts.add(1 if cpu else None)
                elif isinstance(raw, bool):
                    counts.add(None)
                elif isinstance(raw, int):
                    counts.add(raw)
                elif isinstance(raw, str):
                    parts = [part for part in raw.split(",") if part.strip()]
                    if len(parts) > 1 or raw.strip().endswith(","):
                        counts.add(len(parts))
                    else:
                        try:
                            counts.add(int(raw))
                        except ValueError:
                            counts.add(None)
                else:
                    counts.add(None)
            else:
                counts.add(None)
        return counts or None


_FABRIC_API = frozenset((
    "setup", "setup_module", "setup_optimizers", "setup_dataloaders", "init_module", "init_tensor", "launch",
    "backward", "clip_gradients", "autocast", "to_device", "print", "barrier", "broadcast", "gather", "all_gather",
    "all_reduce", "save", "load", "load_raw", "no_backward_sync", "sharded_model", "rank_zero_first", "log",
    "log_dict", "call", "seed_everything", "strategy", "accelerator", "device", "global_rank", "local_rank",
    "node_rank", "world_size", "is_global_zero", "loggers", "logger", "_strategy", "_connector", "_precision",
    "run", "_run_impl", "_wrap_and_launch", "_prepare_run_method",
))
# Fabric methods that call `Fabric._validate_launched()` first (Lightning 2.6.6, lightning/fabric/fabric.py).
LAUNCH_CHECKED_METHODS = frozenset((
    "setup", "setup_module", "setup_optimizers", "setup_dataloaders", "init_module", "barrier", "broadcast",
    "all_gather", "all_reduce", "sharded_model",
))


def _arm_displays(node: ast.AST | None) -> list:
    """The list/tuple displays (without `*`) that are arms of a conditional expression given as `devices=`
    (`1 if cpu else [device.index]`): their values are those lists themselves, never mutated, so their
    length is the device count."""
    if isinstance(node, ast.IfExp):
        return _arm_displays(node.body) + _arm_displays(node.orelse)
    if isinstance(node, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return [node]
    return []


def _materializes(named: str) -> tuple[bool, str | None]:
    """(does `init_module(empty_init=True)` build on the meta device, which setup then materializes; how
    setup materializes) under `strategy=<named>` (a registry key or a class name), from the tables:
    FSDP (torch FSDP, "fsdp") and ModelParallel ("model_parallel"); XLAFSDP's `_EmptyInit` is not meta."""
    facts = tables().strategy(named)
    if facts is None or not facts.empty_init_meta:
        return False, None
    return True, "model_parallel" if facts.name == "ModelParallelStrategy" else "fsdp"


def _combined(strategies: list[Strategy]) -> Strategy:
    if len(strategies) == 1:
        return strategies[0]
    kinds = {s.kind for s in strategies}
    materializes = {s.materializes for s in strategies}
    merged = materializes.pop() if len(materializes) == 1 else None
    how = _merged_how(strategies)
    description = " or ".join(dict.fromkeys(s.description for s in strategies))
    launch = _merged_launch(strategies)
    if len(kinds) == 1:
        return Strategy(kinds.pop(), description, merged, how, launch=launch)
    return Strategy(UNKNOWN_STRATEGY, f"a strategy chosen at run time ({description})", merged, how, launch=launch)


def _merged_launch(strategies: list[Strategy]):
    """The launch need shared by every alternative; None (unknown) when they differ."""
    launches = {s.launch for s in strategies}
    return launches.pop() if len(launches) == 1 else None


# Strategies that need `launch()` (Fabric._validate_launched refuses all but these two classes), and the
# registry keys whose launcher spawns or forks processes (_MultiProcessingLauncher, _XLALauncher): their
# `launch()` needs the function to run in the new processes.
_NO_LAUNCH_CLASSES = frozenset(("SingleDeviceStrategy", "SingleDeviceXLAStrategy", "SingleTPUStrategy"))
_SPAWNING_KEYS = frozenset(("ddp_spawn", "ddp_fork", "ddp_notebook", "xla", "xla_fsdp"))


def _launch_of(named: str, accelerator: frozenset | None):
    """What `strategy=<named>` (a registry key or a strategy class name) needs before setup."""
    facts = tables().strategy(named)
    if facts is None or facts.wraps_module is None:
        return None  # unknown, or a base class: a subclass decides
    if facts.name in _NO_LAUNCH_CLASSES:
        return LAUNCH_NONE
    if facts.name == "DataParallelStrategy":
        # "dp" on a CPU falls back to "ddp" (_Connector._check_strategy_and_fallback); on GPUs it is DP.
        if accelerator == frozenset({const("cpu")}):
            return LAUNCH_SCRIPT
        if accelerator is not None and accelerator <= {const("cuda"), const("gpu")}:
            return LAUNCH_NONE
        return LAUNCH_MACHINE
    return LAUNCH_SPAWN if named.lower() in _SPAWNING_KEYS else LAUNCH_SCRIPT


def _merged_how(strategies: list[Strategy]) -> object:
    """How the alternatives materialize, together: one way, or "mixed" when it depends on which runs."""
    hows = {s.how for s in strategies}
    materializes = {s.materializes for s in strategies}
    if len(hows) == 1 and len(materializes) == 1:
        return hows.pop()
    if hows == {None}:
        return None
    return "mixed"


def _shown(name: str, texts: dict, keywords: dict) -> str | None:
    """A Fabric argument as the code writes it, or as the literal it holds (from a `**config`)."""
    if name in texts:
        return texts[name]
    values = keywords.get(name)
    if values and len(values) == 1:
        (value,) = values
        if isinstance(value, Const):
            return json.dumps(value.value)
    return None
