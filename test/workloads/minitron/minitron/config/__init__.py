"""Command-line configuration: Megatron-compatible flags and their validation."""

from minitron.config.arguments import build_parser, parse_args
from minitron.config.validation import ConfigError, validate_args

__all__ = ["build_parser", "parse_args", "validate_args", "ConfigError"]
