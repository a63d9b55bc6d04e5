"""The fence's side of the protocol against its one definition, fence-protocol.json: every message's fields,
their types and whether they are optional (fence_protocol.py's TypedDicts, which mypy --strict holds the code to),
the stop signals and the file names. test/unit/fence-protocol-schema.spec.ts does the same for the agent's side."""
from __future__ import annotations

import json
import types
import typing
import unittest
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from fence_support import FENCE_DIR

import fence_protocol
from fence_postmaster import STOP_SIGNALS, fence_paths

SCHEMA: dict[str, Any] = json.loads((FENCE_DIR / 'fence-protocol.json').read_text())
PRIMITIVES: dict[object, str] = {int: 'integer', float: 'number', str: 'string', bool: 'boolean', type(None): 'null'}

# A field's type in one comparable form: the sorted alternatives, each a primitive's name, a quoted literal,
# {'array': ...} or {'object': {field: {'type': ..., 'optional': ...}}}.
Shape = list[Any]


def _sorted(alternatives: list[Any]) -> Shape:
    return sorted(alternatives, key=lambda alternative: json.dumps(alternative, sort_keys=True))


def schema_type(text: str) -> Shape:
    alternatives: list[Any] = []
    for alternative in text.split(' | '):
        if alternative.endswith('[]'):
            alternatives.append({'array': schema_type(alternative[:-2])})
        elif alternative.startswith("'") or alternative in PRIMITIVES.values():
            alternatives.append(alternative)
        else:
            alternatives.append({'object': schema_fields(SCHEMA['types'][alternative])})
    return _sorted(alternatives)


def schema_fields(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: {'type': schema_type(field['type']), 'optional': field.get('optional', False)}
            for name, field in fields.items() if name != '$comment'}


def python_type(annotation: object) -> Shape:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return _sorted([alternative for member in get_args(annotation) for alternative in python_type(member)])
    if origin is Literal:
        return _sorted(["'%s'" % value for value in get_args(annotation)])
    if origin is list:
        return [{'array': python_type(get_args(annotation)[0])}]
    if is_typeddict(annotation):
        return [{'object': python_fields(annotation)}]
    if annotation in PRIMITIVES:
        return [PRIMITIVES[annotation]]
    raise AssertionError('no schema type for %r' % (annotation,))


def python_fields(typed_dict: Any) -> dict[str, Any]:
    hints = get_type_hints(typed_dict)
    return {name: {'type': python_type(hints[name]), 'optional': name in typed_dict.__optional_keys__}
            for name in hints}


class ProtocolSchema(unittest.TestCase):
    maxDiff = None

    def assert_same_messages(self, schema_messages: dict[str, Any], python_messages: dict[str, type]) -> None:
        names = sorted(name for name in schema_messages if name != '$comment')
        self.assertEqual(sorted(python_messages), names)
        for name in names:
            with self.subTest(message=name):
                self.assertEqual(python_fields(python_messages[name]), schema_fields(schema_messages[name]))

    def test_requests_match_the_schema(self) -> None:
        self.assert_same_messages(SCHEMA['requests'], fence_protocol.REQUESTS)

    def test_events_match_the_schema(self) -> None:
        self.assert_same_messages(SCHEMA['events'], fence_protocol.EVENTS)

    def test_launch_options_and_journal_entries_match_the_schema(self) -> None:
        self.assertEqual(python_fields(fence_protocol.LaunchOptions), schema_fields(SCHEMA['launchOptions']))
        self.assertEqual(python_fields(fence_protocol.JournalEntry), schema_fields(SCHEMA['journalEntry']))

    def test_stop_signals_match_the_schema(self) -> None:
        expected = {mode: name for mode, name in SCHEMA['stopSignals'].items() if mode != '$comment'}
        self.assertEqual({mode: signum.name for mode, signum in STOP_SIGNALS.items()}, expected)
        self.assertEqual(sorted(typing.get_args(fence_protocol.StopMode)), sorted(expected))

    def test_the_files_the_fence_writes_match_the_schema(self) -> None:
        expected = {key: '/state/' + entry['name'] for key, entry in SCHEMA['files'].items()
                    if key != '$comment' and entry['writtenBy'] == 'fence'}
        self.assertEqual(fence_paths('/state'), expected)

    def test_a_type_that_differs_is_told_apart(self) -> None:
        """The comparison itself: a field typed otherwise, or made optional, does not pass as the same."""
        class Widened(typing.TypedDict):
            op: Literal['stop']
            mode: str

        self.assertNotEqual(python_fields(Widened), schema_fields(SCHEMA['requests']['stop']))
        self.assertNotEqual(python_fields(fence_protocol.FenceWatchdogState),
                            schema_fields(dict(SCHEMA['types']['FenceWatchdogState'], required={'type': 'boolean'})))


if __name__ == '__main__':
    unittest.main()
