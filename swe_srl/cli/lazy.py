"""Commands imported when they run: a group lists its commands from a registry (name → help line and
``"module:attribute"``), so ``--help`` imports no command module and a command imports only its own module and stack.

The attribute is a command function (typed with ``typer.Option``/``typer.Argument``) or a ``typer.Typer`` sub-group;
a sub-group whose commands live in several modules is a registry of its own (a nested :class:`LazyGroup`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command, get_group


@dataclass(frozen=True)
class Lazy:
    """One registry entry: the help line ``--help`` shows, and what to import when the command runs."""

    help: str
    target: str | Mapping[str, Lazy]
    """``"package.module:attribute"``, or the registry of a sub-group spread over several modules."""

    def load(self, name: str) -> Any:
        """The click command (or group) named ``name``; imports its module."""
        if not isinstance(self.target, str):
            return LazyGroup(name=name, help=self.help, no_args_is_help=True, lazy=self.target)
        module, _, attribute = self.target.partition(":")
        found = getattr(importlib.import_module(module), attribute)
        # a Typer is a group even with one command (``expert generate``); a function is one command
        command = get_group(found) if isinstance(found, typer.Typer) else get_command(_single(found, name))
        command.name = name
        return command


def _single(function: Any, name: str) -> typer.Typer:
    """A Typer holding one command: typer turns it into a plain command (not a group)."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command(name)(function)
    return app


class LazyGroup(TyperGroup):
    """A Typer group whose commands come from ``lazy`` (a class attribute, or the ``lazy`` keyword)."""

    lazy: Mapping[str, Lazy] = {}

    def __init__(self, *, lazy: Mapping[str, Lazy] | None = None, **attrs: Any) -> None:
        super().__init__(**attrs)
        if lazy is not None:
            self.lazy = lazy
        self._loaded: dict[str, Any] = {}
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *(name for name in self.lazy if name not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        entry = self.lazy.get(cmd_name)
        if entry is None or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        if self._listing:  # the help screen needs the name and the help line only
            return TyperCommand(cmd_name, help=entry.help)
        if cmd_name not in self._loaded:
            self._loaded[cmd_name] = entry.load(cmd_name)
        return self._loaded[cmd_name]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
