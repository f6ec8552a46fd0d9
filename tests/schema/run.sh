#!/bin/sh
# run.sh BUILD_DIR SRC_DIR SCHEMA_DIR: records every message the server
# writes in the tests that support recording, then validates each one
# against the official schema of its revision (make check-schema).
# Exits 77 (skip) when Node/npm or the schemas are not available.
set -eu
build=$1
src=$2
schemas=$3

if [ ! -f "$schemas/2025-11-25/schema.json" ]; then
	echo "check-schema: no MCP schemas at $schemas (configure --with-mcp-schema=DIR)"
	exit 77
fi
if ! command -v node >/dev/null 2>&1; then
	echo "check-schema: node is needed for the JSON Schema validator"
	exit 77
fi

prefix="$build/.schema-node"
. "$src/tests/lib/npm-prefix.sh"
npm_prefix_or_exit check-schema "$prefix" "$src/tests/schema" node_modules/ajv-formats

rec="$build/schema-record"
rm -rf "$rec"
mkdir -p "$rec"
# In-process tests that record what the server wrote.
MCP_SCHEMA_RECORD="$rec/surface.jsonl" "$build/tests/unit/test_surface" >/dev/null
# The scenarios over real pipes record what the binary wrote.
if command -v python3 >/dev/null 2>&1; then
	MCP_SCHEMA_RECORD="$rec/stdio.jsonl" MCP_EVERYTHING="$build/examples/mcp-everything" \
		python3 "$src/tests/stdio/test_stdio.py" >/dev/null
	# Both eras on one process: 2026-07-28 answers are recorded under
	# that revision and validated against its schema.
	MCP_SCHEMA_RECORD="$rec/modern.jsonl" MCP_EVERYTHING="$build/examples/mcp-everything" \
		python3 "$src/tests/stdio/test_modern.py" >/dev/null
	# Tool errors for arguments that break their schema, the -32603 of
	# a result that breaks its output schema, and refused cursors.
	MCP_SCHEMA_RECORD="$rec/args.jsonl" MCP_EVERYTHING="$build/examples/mcp-everything" \
		python3 "$src/tests/stdio/test_args.py" >/dev/null
	# A 2024-11-05 client (mcp-everything and mcp-files): validated
	# against the 2024-11-05 schema, a draft-07 one.
	MCP_SCHEMA_RECORD="$rec/rev2024.jsonl" MCP_EVERYTHING="$build/examples/mcp-everything" \
		MCP_FILES="$build/examples/mcp-files" \
		python3 "$src/tests/stdio/test_rev2024.py" >/dev/null
	if [ ! -s "$rec/rev2024.jsonl" ]; then
		echo "check-schema: test_rev2024.py recorded nothing to check against 2024-11-05"
		exit 1
	fi
	# The same revision on the legacy HTTP+SSE transport.
	MCP_SCHEMA_RECORD="$rec/legacy-sse.jsonl" MCP_EVERYTHING="$build/examples/mcp-everything" \
		python3 "$src/tests/http/test_legacy_sse.py" rev_2024_over_legacy_sse >/dev/null
	if [ ! -s "$rec/legacy-sse.jsonl" ]; then
		echo "check-schema: test_legacy_sse.py recorded nothing to check against 2024-11-05"
		exit 1
	fi
	# The extensions: tasks of both eras, skills, MCP Apps, trace context
	# (the stdio scenarios; extension messages are checked against
	# tests/schema/extensions.json, see validate.mjs).
	MCP_SCHEMA_RECORD="$rec/extensions.jsonl" MCP_EVERYTHING="$build/examples/mcp-everything" \
		python3 "$src/tests/scenarios/test_adv_tasks.py" modern_task_lifecycle_and_gating \
		eof_with_tasks_running cancel_while_waiting_for_input \
		input_rounds_partial_ttl_and_limit status_notifications_on_listen \
		trace_context_passed_on apps_listing skills_both_eras >/dev/null
fi
set -- "$rec"/*.jsonl
MCP_NODE_PREFIX="$prefix" node "$src/tests/schema/validate.mjs" "$schemas" "$@"
