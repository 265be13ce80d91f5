"""Validates a plan against lib/Plan/fastci-plan-1.schema.json.

Implements the JSON Schema keywords that schema uses (type, const, enum,
required, properties, additionalProperties, items, minItems, minLength,
minimum), so the test needs no third-party validator. Also checks what a
schema cannot say: positions count 1..n and the summary counts the lists.
Usage: check_plan.py PLAN.json [SCHEMA.json]; prints each violation, exit 1.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SCHEMA = os.path.join(HERE, "..", "..", "..", "..", "lib", "Plan",
                              "fastci-plan-1.schema.json")
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool,
         "null": type(None)}


def has_type(value, name):
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[name])


def validate(value, schema, path, errors):
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        if not any(has_type(value, t) for t in types):
            errors.append("%s: expected %s, got %r" % (path, "/".join(types), value))
            return
    if "const" in schema and value != schema["const"]:
        errors.append("%s: expected %r" % (path, schema["const"]))
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %r is not one of %r" % (path, value, schema["enum"]))
    if "minimum" in schema and has_type(value, "number") and value < schema["minimum"]:
        errors.append("%s: %r < %r" % (path, value, schema["minimum"]))
    if "minLength" in schema and isinstance(value, str) and len(value) < schema["minLength"]:
        errors.append("%s: shorter than %d" % (path, schema["minLength"]))
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append("%s: missing %r" % (path, key))
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                validate(item, properties[key], "%s.%s" % (path, key), errors)
            elif extra is False:
                errors.append("%s: unexpected key %r" % (path, key))
            elif isinstance(extra, dict):
                validate(item, extra, "%s.%s" % (path, key), errors)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append("%s: fewer than %d items" % (path, schema["minItems"]))
        for index, item in enumerate(value):
            if "items" in schema:
                validate(item, schema["items"], "%s[%d]" % (path, index), errors)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        plan = json.load(f)
    with open(sys.argv[2] if len(sys.argv) > 2 else DEFAULT_SCHEMA) as f:
        schema = json.load(f)
    errors = []
    validate(plan, schema, "$", errors)
    if not errors:
        positions = [t["position"] for t in plan["tests"]]
        if positions != list(range(1, len(positions) + 1)):
            errors.append("$.tests: positions are not 1..n: %r" % positions)
        summary = plan["summary"]
        if summary["skipped"] != len(plan["skipped"]):
            errors.append("$.summary.skipped does not count $.skipped")
        if summary["pruned"] != len(plan["pruned"]):
            errors.append("$.summary.pruned does not count $.pruned")
    for error in errors:
        print("plan violates schema: " + error)
    if not errors:
        print("plan conforms to fastci-plan/1: %d tests" % len(plan["tests"]))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
