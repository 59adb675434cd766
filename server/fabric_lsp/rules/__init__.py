"""The rules, one module each: analysis facts in, findings (with fixes) out."""

from __future__ import annotations

from fabric_lsp.rules import (
    fab001_unmarked_forward_method,
    fab002_missing_reset_parameters,
    fab003_mark_forward_method_bound,
    fab004_mark_forward_method_invalid_name,
    fab005_missing_launch,
    fab006_loss_backward_on_wrapped_output,
    fab007_setup_misuse,
    fab008_launch_misuse,
    fab009_frozen_module_setup,
)
from fabric_lsp.rules.base import RuleModule

ALL_RULES: tuple[RuleModule, ...] = (
    fab001_unmarked_forward_method.RULE,
    fab002_missing_reset_parameters.RULE,
    fab003_mark_forward_method_bound.RULE,
    fab004_mark_forward_method_invalid_name.RULE,
    fab005_missing_launch.RULE,
    fab006_loss_backward_on_wrapped_output.RULE,
    fab007_setup_misuse.RULE,
    fab008_launch_misuse.RULE,
    fab009_frozen_module_setup.RULE,
)
