"""One documentation page per rule, in ruff's shape (docs/rules/FAB001.md ...), generated here.

`fabric-lsp rules --format markdown [CODE ...]` prints them and tests/test_rule_docs.py checks that
the files in docs/rules/ are exactly what this module renders, so the pages cannot drift from the
code: the runtime error is the record's errorMessage (copied from Lightning) and its other paths'
(records/paths.json), filled in with the example's names as hover shows them; the example is one of
the rule module's INVALID cases (RuleProse.example), checked by the engine as it is written, with what
fabric-lsp reports on it; "Use instead" is that example with every fix applied (unsafe ones included). The
prose (what it does, fixes, severities) is the text below.

Regenerate the pages after changing a rule, its record or its prose:

    python -m fabric_lsp.report.rule_docs docs/rules
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import textwrap
from dataclasses import dataclass

from fabric_lsp.records.loader import Record, RecordSet, default_records
from fabric_lsp.records.render import _code_block, _inline_code, example_fix, runtime_message
from fabric_lsp.records.rules_table import RULES, Rule, rule_by_code

_LABEL = re.compile(r"[ \t]*# expect: [A-Z]+[0-9]+ \w+[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class RuleProse:
    what: str  # "What it does"
    why: str  # "Why is this bad?": before the runtime error
    not_reported: str  # what looks alike but is left alone
    fix: str  # what the fixes do
    fix_safety: str
    severity: tuple[tuple[str, str], ...]  # (severity, when)
    fix_availability: str  # ruff's "Fix is always/sometimes available."
    example: int = 0  # which of the rule module's INVALID cases the page shows


PROSE: dict[str, RuleProse] = {
    "FAB001": RuleProse(
        what=(
            "Finds calls `wrapped.m(...)` of a custom method on a model returned by `fabric.setup(...)` or "
            "`fabric.setup_module(...)` when `m` runs a module of the model's tree (a child layer, `self(...)`, "
            "`self.forward(...)`, also through helper methods) and `wrapped.mark_forward_method(\"m\")` was not "
            "called before. The wrapped model is followed wherever it goes in the project: helpers that receive "
            "it, return values, attributes, base classes, factories in other modules."
        ),
        why=(
            "Under a strategy that wraps the module (every `ddp*` strategy, `dp`, `fsdp`, `deepspeed*`, "
            "`xla_fsdp`; `devices>1` or `num_nodes>1` with the default strategy; or a model that was "
            "`torch.compile`d before setup, even on one device), Lightning hooks every module of the tree while "
            "the method runs, and when a forward ran outside the wrapper's own `forward` it raises as the method "
            "returns, because the call bypassed the strategy (DDP's gradient synchronisation, FSDP's parameter "
            "gathering). That happens minutes into a multi-GPU job, after the data loading and the first steps:"
        ),
        not_reported=(
            "Names the wrapper itself has (everything of `nn.Module`, `forward`, `training_step` and the other "
            "`*_step` methods, which Lightning routes through `forward`), names marked before the call, "
            "staticmethods, properties whose value is not a bound method, plain attributes, generator methods "
            "(they return before their body runs), `functools.singledispatchmethod`s (a plain function when "
            "looked up: the wrapper does not track it), methods that never run a module, and calls on the "
            "unwrapped model (`wrapped.module.m(...)`, `fabric.unwrap`). A property that returns a bound method "
            "(`return self._greedy`) is tracked like the method it returns, and reported when that method runs "
            "a module. A function bound to the instance at run time (`model.step = types.MethodType(step, "
            "model)` before setup, `self.step = step.__get__(self)` in `__init__`) is a method for Lightning "
            "(`inspect.ismethod` holds): it is reported when its body, run with `self` = the model, runs a "
            "module, and `mark_forward_method(\"step\")` removes the error."
        ),
        fix=(
            "Marks the method right after the `fabric.setup(...)` that wrapped the model "
            "(`model.mark_forward_method(\"generate\")`; a factory's `return fabric.setup(m, opt)` becomes "
            "`m, opt = fabric.setup(m, opt)`, the mark, `return m, opt`). When that file may not be edited "
            "(outside the checked paths), the in-file alternative marks the method just before the failing call, "
            "or, where no line before the call fits (a lambda, a receiver that is a call or a subscript), calls "
            "`model.module.m(...)`."
        ),
        fix_safety=(
            "The mark is safe: the call then goes through the strategy's `forward`, which is what the runtime "
            "asks for, and on a single device nothing changes. It is offered before the failing call only when "
            "the receiver there is always the Fabric wrapper (a mark on an unwrapped module raises "
            "AttributeError). `model.module.m(...)` is unsafe: it bypasses the strategy, so DDP does not "
            "synchronise the gradients of that call."
        ),
        severity=(
            ("error", "the code states a wrapping strategy (`Fabric(strategy=\"ddp\")`, `devices=4`, ...) or "
                      "compiles the model before setup"),
            ("warning", "the strategy is not visible in the code (from argparse, a config file, the environment, "
                        "a Fabric passed in) and the method raises under a wrapping one; or the call is made only "
                        "under a run-time choice (`if args.sample:`), which the note names"),
            ("hint", "the stated strategy is single-device: it cannot raise today, but `fabric run --strategy ddp` "
                     "or `LT_STRATEGY` would make it raise (hints are off on the command line unless `--hints`)"),
        ),
        fix_availability="Fix is always available.",
        example=3,  # through a helper: the analysis follows the wrapped model
    ),
    "FAB002": RuleProse(
        what=(
            "Finds a module that directly owns parameters or buffers and has no `reset_parameters` (its own or "
            "inherited), created on the meta device (`with torch.device(\"meta\"):`, "
            "`torch.set_default_device(\"meta\")`, `fabric.init_module(empty_init=True)` under FSDP or "
            "ModelParallel) and then materialized (`_materialize_meta_tensors(...)`, "
            "`_materialize_distributed_module(...)`, or `fabric.setup` under FSDP or ModelParallel). Library "
            "modules that need it count too: `nn.MultiheadAttention` (so `nn.TransformerEncoderLayer` and the "
            "other transformer layers), `nn.ParameterList`/`ParameterDict`, losses built with a `weight=` tensor "
            "and parametrizations. The two halves may sit in different functions and the class in another file. "
            "Other strategies build nothing on the meta device and materialize nothing: `\"auto\"` (one device or "
            "DDP, whatever `devices=` is), DDP, DeepSpeed and XLAFSDP, whose `init_module(empty_init=True)` is "
            "`_EmptyInit` (uninitialised memory on the real device; Lightning 2.6.6's `xla_fsdp.py`) and whose setup "
            "only wraps the module."
        ),
        why=(
            "Materialization allocates the meta tensors for real, uninitialised (`to_empty`), and calls "
            "`reset_parameters()` on every module that owns one to fill them. A module without it cannot be "
            "initialised. What happens then depends on the path; Lightning's `_materialize_meta_tensors` raises:"
        ),
        not_reported=(
            "Containers that only hold standard layers, a meta-device model that is never materialized in sight "
            "or is loaded with `load_state_dict(..., assign=True)`, and `init_module(empty_init=True)` under DDP, "
            "a single device or DeepSpeed (it only skips the initializers there: nothing is materialized); under "
            "ModelParallel, a model whose weights the program sets after setup (`model.reset_parameters()`, "
            "`model.apply(init_fn)`, a loaded checkpoint); and a layer `__init__` builds only under a flag the "
            "program leaves off (`Smear(config) if config.use_smear else nn.Identity()`, `use_smear` False). "
            "A layer built only under a flag whose value the program does not state (a command-line argument, a "
            "config read at run time) is a warning that names the condition (`when config.use_smear is true`), "
            "never an error."
        ),
        fix=(
            "Adds `reset_parameters()` to the class, re-creating each tensor as the constructor does; gives "
            "`nn.MultiheadAttention` the `reset_parameters` it lacks (as Lightning's transformer demo does); "
            "otherwise, or when the class's file may not be edited, builds the model off the meta device "
            "(`\"meta\"` -> `\"cpu\"`, `empty_init=False`)."
        ),
        fix_safety=(
            "Adding `reset_parameters()` is safe when it reproduces the constructor's initial values exactly, "
            "and unsafe otherwise (the title says \"initial values differ from the constructor's\"). Patching "
            "`nn.MultiheadAttention` and building off the meta device are unsafe: the first changes a library "
            "class for the whole process, the second gives up the memory and time the meta device saves."
        ),
        severity=(
            ("error", "the meta-device creation and the materialization are both certain and one class reaches "
                      "the materialization"),
            ("warning", "`empty_init` is not a literal (`empty_init=(fabric.world_size > 1)`), the strategy is "
                        "chosen at run time (never an error), several classes may be the one built, or the "
                        "materialization is ModelParallel's (no exception: the weights stay uninitialised memory)"),
        ),
        fix_availability="Fix is always available.",
    ),
    "FAB003": RuleProse(
        what=(
            "Finds `wrapped.mark_forward_method(wrapped.m)` and `wrapped.mark_forward_method(Model.m)` (also "
            "`type(model.module).m`): a method passed as an object instead of by name."
        ),
        why=(
            "`mark_forward_method` accepts a string or a bound method. Under a wrapping strategy (or after "
            "`torch.compile` before setup) `wrapped.m` is the plain function Lightning builds around the method, "
            "and `Model.m` taken from the class is a plain function on every strategy, so the mark raises before "
            "anything runs:"
        ),
        not_reported=(
            "`mark_forward_method(\"m\")` and `mark_forward_method(wrapped.module.m)` (a bound method); "
            "`type(wrapped).m` on the wrapper itself, which fails earlier with AttributeError on `_FabricModule` "
            "(not this error); a mark inside a `try` of its own function whose `except` catches TypeError "
            "(or `Exception`, a bare `except`, `contextlib.suppress(TypeError)`) and does not raise again: the "
            "program expects the mark to fail and goes on without it."
        ),
        fix="Passes the method's name: `model.mark_forward_method(\"generate\")`.",
        fix_safety="Safe: the name marks the same method, on every strategy.",
        severity=(
            ("error", "`Model.m` (every strategy), or `wrapped.m` under a stated wrapping strategy or after "
                      "`torch.compile`"),
            ("warning", "`wrapped.m` where the strategy is not visible in the code"),
            ("hint", "`wrapped.m` under a single-device strategy (a bound method there; it breaks under DDP)"),
        ),
        fix_availability="Fix is always available.",
    ),
    "FAB004": RuleProse(
        what=(
            "Finds `wrapped.mark_forward_method(\"x\")` where `x` is not a method of the wrapped model's class: "
            "a typo, a plain attribute or child module, a property whose value is not a bound method, a "
            "staticmethod, a `functools.partialmethod` or `functools.singledispatchmethod`, or `\"forward\"`. "
            "The name may be computed from literals: an f-string of known parts, an element of a literal "
            "tuple iterated over, a parameter of a helper that is given a literal."
        ),
        why=(
            "`mark_forward_method` looks the name up on the original module and accepts only a bound method, "
            "on every strategy, single device included:"
        ),
        not_reported=(
            "Regular methods, classmethods, generator and async methods, inherited `nn.Module` methods, an "
            "instance attribute holding a bound method (`self.decode = self._greedy`, or a function bound with "
            "`types.MethodType(f, self)` / `f.__get__(self)`) and a property that returns "
            "a bound method (Lightning checks `isinstance(getattr(module, name), MethodType)`, which holds for "
            "it). A mark inside a `try` of its own function whose `except` catches the error (AttributeError, "
            "ValueError for `\"forward\"`, or `Exception`, a bare `except`, `contextlib.suppress(...)`) and does "
            "not raise again: the program expects the mark to fail for some models and goes on without it "
            "(a method that then stays unmarked is still FAB001's)."
        ),
        fix=(
            "Corrects a typo to the closest method name; removes a mark of `\"forward\"`; removes a mark of a "
            "name that is not a method when no method name is close. For a name computed from literals the "
            "literal is edited where it is written (the element of the tuple an f-string formats, the helper "
            "call that passes `\"forward\"`), so the marks of the other names stay. A class with more than "
            "1,000 methods is not searched for the closest name (a notice says so): no fix is offered then."
        ),
        fix_safety=(
            "Removing a mark of `\"forward\"` is safe (`forward` already runs through the strategy). Correcting "
            "a typo is unsafe (another method gets routed through `forward`: most likely what was meant, but "
            "read it), and so is removing the mark of a non-method (it only removes the error: the author "
            "wanted something routed through `forward`). An edit of a computed name's literal is always unsafe: "
            "the tuple may be read elsewhere too, and the helper call that is removed may do more than mark."
        ),
        severity=(
            ("error", "the name is not a method of any class that reaches the mark (every strategy raises)"),
            ("warning", "it is not a method of some of the classes that may reach the mark"),
        ),
        fix_availability="Fix is sometimes available.",
    ),
    "FAB005": RuleProse(
        what=(
            "Finds the first call that needs a launched Fabric (`setup`, `setup_module`, `setup_optimizers`, "
            "`setup_dataloaders`, `init_module`, `barrier`, `broadcast`, `all_gather`, `all_reduce`) on a Fabric "
            "whose strategy needs several processes, when nothing launches it before: no `fabric.launch()` or "
            "`fabric.launch(fn)` anywhere in the program, or a `launch()` later in the same function. The Fabric "
            "is followed as FAB001 follows it: into helpers, through configs and `**kwargs` dicts, subclasses."
        ),
        why=(
            "Each of those methods starts with `Fabric._validate_launched()`, which refuses every strategy but "
            "`SingleDeviceStrategy` and `DataParallelStrategy` until the Fabric is launched, whatever the number "
            "of devices (`strategy=\"ddp\", devices=1` raises too). What launches it, verified with Lightning "
            "2.6.6 on CPU: `fabric.launch()`, `fabric.launch(fn)`, calling `run()` of a Fabric subclass that "
            "overrides it, and the `fabric run` CLI (it sets `LT_CLI_USED=1`, which the constructor reads). "
            "`python train.py`, `torchrun` and `srun` do not: started by them, the script raises at its first "
            "setup:"
        ),
        not_reported=(
            "A single-device Fabric (`accelerator=\"cpu\"`, `devices=1`, also `devices=1 if cpu else "
            "[device.index]`: a list of device indices counts as its length; it never needs `launch()`, and `fabric "
            "run --strategy ddp` launches it), a Fabric launched in another function (the order across functions "
            "cannot be told), a subclass overriding `run()`, a Fabric passed in from outside, and a script whose "
            "file names its `fabric run ... script.py` command (a usage line in its docstring or comments), or "
            "whose project starts it so in a README, a docs page or a shell script (`lightning run model ... "
            "pretrain/train.py` in README.md or scripts/*.sh, as TinyLlama-style repositories do; read as text, in "
            "the project folder, its parent when it holds no `.git`, and the folders right below them but "
            "those holding a `.git` of their own, another repository's): "
            "such a script must not call `launch()`, since under the CLI `launch()` raises RuntimeError \"This "
            "script was launched through the CLI\". Only `LT_STRATEGY`/`LT_DEVICES` set by hand without the CLI "
            "make a single-device script raise; that is left alone. A project whose documents start other "
            "scripts with the CLI, not this one, gets a hint instead of a warning."
        ),
        fix=(
            "Inserts `fabric.launch()` on the line after the `fabric = Fabric(...)` statement (any target: "
            "`self.fabric.launch()`); a later `launch()` can stay (without a function a second call does "
            "nothing). No fix under a spawning strategy (`ddp_spawn`, `ddp_fork`, `ddp_notebook`, `xla`), whose "
            "`launch()` needs the training function (FAB008)."
        ),
        fix_safety=(
            "Safe in a script (the constructor at module level, or a file with a `__main__` guard): the default "
            "launcher starts the other processes by running the script's command again, which is what such a "
            "script expects. Unsafe elsewhere: code imported by something else would have that command re-run."
        ),
        severity=(
            ("warning", "the strategy the code states needs several processes (`ddp*`, `fsdp*`, `deepspeed*`, "
                        "`devices>1`, `num_nodes>1`, a strategy object), or the strategy is chosen at run time: "
                        "`python`, torchrun and srun raise, but `fabric run` would launch it, and how the script is "
                        "started is not in the code; and where the machine decides (`Fabric()` with the default "
                        "`devices=\"auto\"` on an accelerator that may have several devices, `\"dp\"` without an "
                        "accelerator): one GPU runs, several raise, and `fabric.launch()` is one line"),
            ("hint", "the project's README or scripts start its other scripts with `fabric run` (this one likely "
                     "too)"),
        ),
        fix_availability="Fix is sometimes available.",
    ),
    "FAB006": RuleProse(
        what=(
            "Finds `loss.backward()` where `loss` is computed from the output of a model returned by "
            "`fabric.setup(...)` or `fabric.setup_module(...)`: `model(x)` or `model.forward(x)` itself, an "
            "attribute, item or method of it (`out.logits`, `out[0]`, `out.sum()`), arithmetic on it, a torch "
            "function or loss module applied to it (`F.cross_entropy(model(x), y)`, `nn.MSELoss()(...)`), and "
            "what project helpers compute and return from it, in this file or another. It is reported when the "
            "Fabric that set the model up uses mixed precision (`precision=\"16-mixed\"`, `\"bf16-mixed\"` and "
            "their aliases `16`, `\"16\"`, `\"bf16\"`), an FSDP strategy or a DeepSpeed strategy, or a strategy "
            "class of the project that overrides `backward` (Lightning's test is `is_overridden(\"backward\", "
            "strategy, parent=Strategy)`). A project subclass of a Lightning strategy otherwise counts as the class "
            "it extends, and a test's `@pytest.mark.parametrize(\"strategy\", [...])` literals are the values of "
            "its parameter."
        ),
        why=(
            "`_FabricModule.forward` registers a hook on every output tensor that requires a gradient. Under a "
            "strategy or precision plugin that overrides `backward` (mixed precision scales the loss, FSDP and "
            "DeepSpeed run their own backward), the hook raises as soon as `loss.backward()` reaches the output "
            "outside `fabric.backward()`, at the first training step. Verified under Lightning 2.6.6 on CPU "
            "with `precision=\"bf16-mixed\"` (and `\"16-mixed\"`, which Lightning turns into bf16 on CPU); FSDP "
            "and DeepSpeed were checked by asking Lightning's own `is_overridden(\"backward\", ...)` test that "
            "`_register_backward_hook` uses on their precision plugins (tests/test_fab006_backward.py), since "
            "their backward cannot run on this machine's CPU:"
        ),
        not_reported=(
            "`fabric.backward(loss)`; a loss computed from the unwrapped module (`model.module(x)`, "
            "`fabric.unwrap`) or detached (`.detach()`, `.item()`); a loss the analysis cannot trace to the "
            "wrapped model (the output of a function it does not follow, such as a loss function passed in); "
            "a function that neither runs the wrapped model (itself or through what it calls) nor is handed its "
            "output (a gradient check calling a loss helper the training loop also uses); "
            "`def backward(self, loss): loss.backward()` in a class of the project (a Fabric stand-in); "
            "`strategy=\"ddp\"` or a project `DDPStrategy` subclass that overrides no `backward` with a precision "
            "that does not hook (a subclass that gives itself a precision plugin cannot be told: warning); "
            "the default precision `\"32-true\"`, `\"bf16-true\"`, `\"16-true\"`, `\"64-true\"`, "
            "transformer-engine and XLA (their plugins keep the base backward: `loss.backward()` runs). No hint "
            "is given for those: `fabric run --precision bf16-mixed` would make the call raise, but a script that "
            "states no precision says nothing about the one it will get."
        ),
        fix=(
            "Replaces the call with `fabric.backward(loss)` (keeping its arguments: `retain_graph=True` passes "
            "through), naming the Fabric as the code in that function does (`fabric`, `self.fabric`, a "
            "parameter). Under DeepSpeed the model the loss comes from is named too (`model=model`). No fix is "
            "offered where no name in that function holds that Fabric."
        ),
        fix_safety=(
            "Safe: `fabric.backward` runs the same backward with what the strategy and precision add (loss "
            "scaling, the engine's backward). Under DeepSpeed, when the loss may come from several set-up "
            "models, the fix leaves `model=` out and is unsafe."
        ),
        severity=(
            ("error", "the code states mixed precision, an FSDP strategy or a DeepSpeed strategy for the Fabric "
                      "that set the model up"),
            ("warning", "the precision or the strategy is not visible in the code (from argparse, a config file, "
                        "a Fabric passed in) or some of the Fabric objects that reach the call do not hook"),
        ),
        fix_availability="Fix is sometimes available.",
    ),
    "FAB007": RuleProse(
        what=(
            "Finds calls of Fabric's setup API that Lightning's own validation refuses before anything runs: "
            "`fabric.setup(model)` or `fabric.setup_module(model)` where `model` already is the wrapper an earlier "
            "setup returned (also through a helper that receives it); `fabric.no_backward_sync(model)` where "
            "`model` was never set up (the original module, `model.module`, a model whose `setup_module` result "
            "was thrown away); `fabric.setup_dataloaders(x)` where `x` is a list, tuple or dict display or an "
            "instance of a project Dataset class; `fabric.setup_optimizers(...)` under a DeepSpeed or XLA strategy "
            "stated in the code."
        ),
        why=(
            "`_validate_setup`, `_validate_setup_module`, `_validate_setup_dataloaders`, "
            "`_validate_setup_optimizers` and `no_backward_sync` check their arguments on every strategy, a single "
            "device included, so the script stops at that line. Verified under Lightning 2.6.6 on CPU for the "
            "model set up twice, `no_backward_sync` and `setup_dataloaders` (fixtures/cases/fab007_*); the "
            "DeepSpeed case by calling Lightning's `Fabric._validate_setup_optimizers` on a Fabric whose strategy "
            "is a `DeepSpeedStrategy` object (tests/test_fab007_setup.py), since DeepSpeed cannot run here:"
        ),
        not_reported=(
            "A setup whose argument may or may not be a wrapper (a helper guarded by `is_wrapped`, a name that "
            "holds the wrapper on some paths only, an attribute such as `self.model`, whose values the analysis "
            "reads without their order), a fresh model set up in each iteration of a loop, DataLoader subclasses "
            "and loaders the analysis cannot see, a strategy chosen at run time. Not covered yet: an optimizer "
            "or a DataLoader set up twice, and FSDP's refusal of an optimizer that references meta-device "
            "parameters."
        ),
        fix=(
            "Removes the second `model = fabric.setup(model)`; assigns a thrown-away `fabric.setup_module(model)` "
            "(`model = fabric.setup_module(model)`) before `no_backward_sync`; passes a list of DataLoaders as "
            "separate arguments; wraps a Dataset in `torch.utils.data.DataLoader(...)`."
        ),
        fix_safety=(
            "Removing the second setup is safe (the wrapper from the first one is kept). Assigning the setup's "
            "result is unsafe (all later code then runs through the strategy: what was meant, but read it); so is "
            "spreading a list (one loader then comes back alone, not in a list) and wrapping a Dataset (the "
            "loader's batch size is 1 until you set yours). The DeepSpeed case has no automatic fix."
        ),
        severity=(
            ("error", "every value the analysis sees at the call makes Lightning refuse it (every strategy; for "
                      "`setup_optimizers`, a DeepSpeed or XLA strategy written in the code)"),
        ),
        fix_availability="Fix is sometimes available.",
    ),
    "FAB008": RuleProse(
        what=(
            "Finds `fabric.launch(...)` given what it refuses: the result of calling the function "
            "(`launch(train(fabric))`, when that result is not callable), a function or bound method without a "
            "parameter (`def train(): ...; launch(train)`), and `launch()` without a function under a strategy "
            "whose launcher spawns or forks processes (`ddp_spawn`, `ddp_fork`, `ddp_notebook`, `xla`)."
        ),
        why=(
            "`launch` checks its function before anything starts, on every machine and strategy; a called "
            "function's result raises:"
        ),
        not_reported=(
            "`launch(train)`, `launch(train, config)`, a `functools.partial`, a lambda with a parameter, a "
            "factory call that returns a function (`launch(make_train(cfg))`), functions taking only `*args`. "
            "Not a case of this rule: overriding `run()` in a Fabric subclass and starting the script with "
            "`fabric run` (`_prepare_run_method` raises TypeError \"Overriding `Fabric.run()` and launching from "
            "the CLI is not allowed\"): the code cannot show the launch mode, such subclasses are rare in public "
            "code, and the same script started with `python` is correct, so a finding would be wrong far more "
            "often than right."
        ),
        fix=(
            "`launch(train(fabric))` -> `launch(train)` (the call's other arguments follow: `launch(train, cfg)`); "
            "adds the missing parameter (`def train(fabric):`, `def fit(self, fabric):`); under `ddp_spawn` / "
            "`ddp_fork`, `strategy=\"ddp\"`, whose `launch()` runs the script again."
        ),
        fix_safety=(
            "Passing the function is safe when the call's first argument is the launching Fabric (it is what the "
            "launcher passes), unsafe otherwise. Adding a parameter named as the launching Fabric's variable is "
            "safe (it shadows a global of that name with the same object). Changing the strategy is unsafe: the "
            "processes start differently."
        ),
        severity=(("error", "always: Lightning refuses the argument on every strategy and machine"),),
        fix_availability="Fix is sometimes available.",
    ),
    "FAB009": RuleProse(
        what=(
            "Finds `fabric.setup(m)` / `fabric.setup_module(m)` where `m` has no parameter that requires a "
            "gradient on every way the analysis sees to the call: a copy or model frozen before its setup "
            "(`copy.deepcopy(model).requires_grad_(False)`, `vae.requires_grad_(False)`, `for p in m.parameters(): "
            "p.requires_grad = False`, a helper such as `freeze(m)` that does one of these to its argument), an "
            "instance of a project class whose `__init__` ends by freezing it (`self.requires_grad_(False)`, a "
            "perceptual-loss network), an instance of a project class that holds only buffers, only "
            "`nn.Parameter(..., requires_grad=False)`, or no parameter at all (its attributes all read from its "
            "methods, its bases the project's or `nn.Module`), or a torch module that owns none (`nn.BCELoss()`, "
            "`nn.CrossEntropyLoss(weight=w)`: a weight is a buffer)."
        ),
        why=(
            "Under a DDP strategy Fabric wraps the module in torch's `DistributedDataParallel`, which refuses a "
            "module with nothing to synchronise, at the setup call, before any step runs. Facts (Lightning "
            "2.6.6, torch 2.13.0, run on the CPU): `\"ddp\"`, `\"ddp_spawn\"`, a `DDPStrategy`, `\"dp\"` on a "
            "machine without GPUs and `devices=2` with the default strategy raise; a single device does not; torch "
            "FSDP (what `\"fsdp\"` uses) accepts such a module; `model.eval()` and `torch.no_grad()` change "
            "nothing; a module frozen after its setup is not refused. DeepSpeed could not be run here (not "
            "reported under it):"
        ),
        not_reported=(
            "A module of which part still trains (`model.encoder.requires_grad_(False)` then `setup(model)`; or "
            "frozen whole, then part of it switched back on: `model.head.requires_grad_(True)`, a loop over "
            "`named_parameters()` that sets `requires_grad = True` on some), one frozen after its setup, one frozen on some ways to the setup but not on others, a module the analysis "
            "cannot read (an argument of unknown class, a library model that was not frozen in the program), and "
            "any strategy that does not use DistributedDataParallel (single device, FSDP, DeepSpeed, XLA)."
        ),
        fix=(
            "`fabric.setup_module(ema)` -> `fabric.to_device(ema)` (and `fabric.setup(ema)` when the module is "
            "its only argument): the module is moved to the device instead of wrapped. Setting up with "
            "optimizers (`setup(model, optimizer)`) has no fix: a model set up with an optimizer is meant to train, "
            "and the freezing is what to look at."
        ),
        fix_safety=(
            "Unsafe: a module set up by Fabric runs its forward inside the precision plugin's autocast context and "
            "converts its inputs; a module moved with `to_device` does not, so under `16-mixed`, `bf16-mixed` or "
            "`bf16-true` it runs in float32 unless it is cast (`fabric.to_device(vae.to(torch.bfloat16))`)."
        ),
        severity=(
            ("error", "the code states a DDP strategy (`strategy=\"ddp\"`, `DDPStrategy(...)`, `devices=2` with the "
                      "default strategy) and the setup is on the default run's way"),
            ("warning", "the strategy is chosen at run time (argparse, a config file, the environment), `\"dp\"`, "
                        "`devices=\"auto\"` (DDP on a machine with several GPUs), or the setup runs only under a "
                        "run-time choice, which the note names"),
        ),
        fix_availability="Fix is sometimes available.",
    ),
}

_INTRODUCTION = ("<!-- Generated by `fabric-lsp rules --format markdown {code}` "
                 "(server/fabric_lsp/report/rule_docs.py). -->")


def _sentence(text: str) -> str:
    return text if text.endswith((".", "?", "!")) else text + "."


def _strip_labels(text: str) -> str:
    return _LABEL.sub("", text)


def _checked_example(rule: Rule):
    """(example text, its findings, the text with every fix applied) for the rule's INVALID case."""
    from fabric_lsp.settings.config import Config
    from fabric_lsp.fixes.edits import apply_fixes
    from fabric_lsp.engine import check_source
    from fabric_lsp.rules import ALL_RULES

    module = next(module for module in ALL_RULES if module.code == rule.code)
    text = module.invalid[PROSE[rule.code].example].lstrip("\n")
    with tempfile.TemporaryDirectory(prefix="fabric-lsp-docs-") as folder:
        path = os.path.join(folder, "example.py")
        findings = [f for f in check_source(path, text, Config(hints=True)) if f.code == rule.code]
        fixes = [f.fix for f in findings if f.fix is not None]
        fixed = apply_fixes(fixes, {path: text}).texts.get(path, text) if fixes else text
    return text, findings, fixed


_RUN_TIME_CHOICES = """\
### Run-time choices and defaults

The *default run* is the program started with no command-line option, no environment variable set, and
the values its configuration files hold (for a hydra app, what its defaults list composes). What the
program itself fixes is known: literals, module constants, dataclass defaults that no caller overrides,
default arguments that no caller passes, YAML or JSON text written in the program.

- A site the default run reaches, under a strategy the code fixes, is an **error**.
- A site reached only when an option is given (`--sample`), a variable is set (`EVAL=1`) or a
  configuration value differs from the file's (`preview: true`; hydra's `preview=true`) is a **warning**
  whose note names that choice ("when run with `--sample`"). So is a site whose strategy, devices or
  precision comes from an option, a variable or a configuration file, even when the default raises
  (`--strategy`, default "ddp"): a choice made at run time is never an error.
- A branch the program's own values rule out is not followed, and nothing in it is reported: a default
  argument no caller overrides, `hasattr(model, "x")` on a model whose class has no `x` (the wrapper looks
  the name up on the original module), `self.fabric is None` where every instance is given a Fabric, a flag
  that YAML text written in the program turns off.
- A function called only under a choice runs only under it (`if args.sample: preview(model)`), and so does
  the rest of a function after `if not args.sample: return`."""


def _severity_table(prose: RuleProse) -> str:
    rows = ["| severity | when |", "|---|---|"]
    rows += [f"| {severity} | {when} |" for severity, when in prose.severity]
    return "\n".join(rows)


def _runtime_errors(record: Record, context) -> str:
    parts = [_code_block(runtime_message(record, context), "text")]
    parts.append(
        f"{'Lightning' if 'lightning' in record['repo'].lower() else 'torch'}'s source: "
        f"[`{record['filePath']}` line {record['lineNumber']}]({record.github_url}), where the "
        f"message is the f-string {_inline_code(record.error_message)}."
    )
    for path in record.paths:
        kind = "raises" if path.raises else "warns (no exception)"
        parts.append(f"{path.label}, the same root cause {kind}:\n\n"
                     + _code_block(f"{path.error_class}: {_fill(path.error_message, context)}", "text")
                     + f"\n\n({path.file_path} line {path.line_number}, {path.version}.)")
    return "\n\n".join(parts)


def _fill(template: str, context) -> str:
    from fabric_lsp.records.messages import fill_message

    return fill_message(template, context)


def render_rule_page(code: str, records: RecordSet | None = None) -> str:
    rule = rule_by_code(code)
    if rule is None:
        raise ValueError(f"no rule {code!r}")
    records = records or default_records()
    record = records.by_id(rule.record_id)
    assert record is not None, rule.record_id
    prose = PROSE[rule.code]
    text, findings, fixed = _checked_example(rule)
    context = dict(findings[0].context) if findings else None
    reported = "\n".join(
        f"- line {f.span.start.line + 1}, {f.severity.value}: {_sentence(f.one_line_message)}"
        + (f" Fix ({f.fix.applicability.value}): {_sentence(f.fix.title)}" if f.fix else "")
        for f in findings
    )
    parts = [
        _INTRODUCTION.format(code=rule.code),
        f"# {rule.name} ({rule.code})",
        f"{prose.fix_availability} Knowledge-base record `{record.id}` (`fabric-lsp explain {rule.code}`).",
        "## What it does\n\n" + prose.what,
        "## Why is this bad?\n\n" + prose.why + "\n\n" + _runtime_errors(record, context),
        "**Not reported:** " + prose.not_reported,
        "## Example\n\n" + _code_block(_strip_labels(text).rstrip("\n"), "python")
        + "\n\n`fabric-lsp check --hints` reports:\n\n" + reported,
        "Use instead (every fix applied):\n\n" + _code_block(_strip_labels(fixed).rstrip("\n"), "python"),
        "The record's own example:\n\n" + _code_block(example_fix(record), "python"),
        "## Fix\n\n" + prose.fix,
        "## Fix safety\n\n" + prose.fix_safety
        + " `fabric-lsp check --fix` applies the safe fixes; `--unsafe-fixes` adds the unsafe ones.",
        "## Severity\n\n" + _severity_table(prose)
        + "\n\nAn analysis that cannot see enough (a class it cannot resolve, a bound that is hit) never gives "
          "a warning or an error: at most a hint that says what it could not see.",
        _RUN_TIME_CHOICES,
        "## Options\n\n" + _options(rule),
    ]
    return "\n\n".join(parts) + "\n"


def _options(rule: Rule) -> str:
    return textwrap.dedent(f"""\
        In `pyproject.toml` (`[tool.fabric-lsp]`):

        ```toml
        [tool.fabric-lsp]
        ignore = ["{rule.code}"]  # never report it
        severity = {{ {rule.code} = "warning" }}  # report it at another severity
        per-file-ignores = {{ "tests/*" = ["{rule.code}"] }}  # not in these files
        hints = true  # also report hints
        ```

        On the command line: `--select {rule.code}`, `--ignore {rule.code}`. On a line: `# noqa: {rule.code}`.
        In an editor: the same keys as `initializationOptions` or the `fabric-lsp` settings section
        (VS Code: `fabric-lsp.select`, `fabric-lsp.ignore`, `fabric-lsp.severity`, `fabric-lsp.showHints`).""")


def render_rule_pages(codes: list[str] | None = None) -> str:
    """The pages of `codes` (default: every rule), separated by a blank line."""
    records = default_records()
    chosen = [rule.code for rule in RULES] if not codes else [rule_by_code(code).code for code in codes]
    return "\n".join(render_rule_page(code, records) for code in chosen)


def page_path(code: str, docs_dir: str = "docs/rules") -> str:
    return os.path.join(docs_dir, f"{code}.md")


def write_pages(docs_dir: str) -> list[str]:
    """Write docs_dir/FAB00N.md for every rule; returns the paths written."""
    os.makedirs(docs_dir, exist_ok=True)
    records = default_records()
    written = []
    for rule in RULES:
        path = page_path(rule.code, docs_dir)
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(render_rule_page(rule.code, records))
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_pages(sys.argv[1] if len(sys.argv) > 1 else "docs/rules"):
        print(written_path)
