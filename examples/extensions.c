/*
 * extensions.c - the fixtures of the 2026-07-28 extension scenarios of the
 * official conformance suite (tasks, SEP-2663), registered in
 * mcp-everything beside the core ones (conformance.c).
 *
 * Each tool is written once for both eras: a 2025-11-25 client runs the
 * task-capable ones as tasks when it asks (params.task), a 2026-07-28
 * request that declares the tasks extension gets a task because the
 * server decides so (task_support), and input is asked for with
 * mcp_ctx_require_input, which serves a plain request, a task and a
 * legacy session alike.
 *
 * Skills: two skills built in memory, skill://git-workflow (with files in
 * subdirectories, for directory reads) and skill://acme/billing/refunds.
 *
 * MCP Apps: the tool `dice` rolls dice and links to the UI resource
 * ui://mcp-everything/dice, a small HTML view of the roll, with a CSP that
 * allows one font origin and nothing else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "extensions.h"

static const char *str_arg(json_object *args, const char *key, const char *dflt)
{
	const char *v = dflt;
	mcp_args_string(args, key, &v);
	return v;
}

/* The accepted content field `field` of an elicitation answer, or NULL. */
static json_object *accepted(json_object *answer, const char *field)
{
	json_object *action = NULL, *content = NULL, *v = NULL;
	if (!json_object_object_get_ex(answer, "action", &action) ||
	    strcmp(json_object_get_string(action), "accept") != 0 ||
	    !json_object_object_get_ex(answer, "content", &content) ||
	    !json_object_object_get_ex(content, field, &v))
		return NULL;
	return v;
}

static int ask_json(mcp_ctx *ctx, const char *key, const char *method, const char *params_json)
{
	json_object *p = json_tokener_parse(params_json);
	int rc = p ? mcp_ctx_require_input(ctx, key, method, p) : MCP_ENOMEM;
	json_object_put(p);
	return rc;
}

#define CONFIRM_FORM(what)                                                                 \
	"{\"mode\":\"form\",\"message\":\"" what "\",\"requestedSchema\":{\"type\":\"object\"," \
	"\"properties\":{\"confirm\":{\"type\":\"boolean\"}},\"required\":[\"confirm\"]}}"

/* ---- tasks (SEP-2663) ------------------------------------------------------- */

/* greet: never a task. */
static int tool_greet(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx, (void)user;
	char text[256];
	snprintf(text, sizeof text, "Hello, %.200s!", str_arg(args, "name", "World"));
	return mcp_result_add_text(out, text);
}

/* slow_compute: sleeps `seconds` on its token (a tasks/cancel wakes it),
 * then answers. */
static int tool_slow_compute(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	double seconds = 1;
	mcp_args_double(args, "seconds", &seconds);
	if (mcp_ctx_sleep(ctx, (int64_t)(seconds * 1000)) == MCP_ECANCELED)
		return MCP_ECANCELED;
	char text[256];
	snprintf(text, sizeof text, "computed %.100s in %g s", str_arg(args, "label", "result"),
		 seconds);
	return mcp_result_add_text(out, text);
}

/* failing_job: a tool error (isError: true) after a moment; a task of it
 * completes (SEP-2663) with that result. */
static int tool_failing_job(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args, (void)user;
	if (mcp_ctx_sleep(ctx, 300) == MCP_ECANCELED)
		return MCP_ECANCELED;
	return mcp_result_tool_error(out, "the job failed: its input could not be processed");
}

/* protocol_error_job: a JSON-RPC error; a task of it fails with it. */
static int tool_protocol_error_job(mcp_ctx *ctx, json_object *args, mcp_result *out,
				   void *user)
{
	(void)args, (void)user;
	if (mcp_ctx_sleep(ctx, 100) == MCP_ECANCELED)
		return MCP_ECANCELED;
	return mcp_result_set_error(out, MCP_JSONRPC_INTERNAL_ERROR,
				    "Internal error: the job's backend is unavailable", NULL);
}

/* confirm_delete: asks for a confirmation, then says what it did. */
static int tool_confirm_delete(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	const char *file = str_arg(args, "filename", "file");
	json_object *answer = mcp_ctx_input_response(ctx, "confirm");
	if (!answer) {
		int rc = ask_json(ctx, "confirm", "elicitation/create",
				  CONFIRM_FORM("Delete the file?"));
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	json_object *yes = accepted(answer, "confirm");
	char text[256];
	snprintf(text, sizeof text, "%s %.200s", yes && json_object_get_boolean(yes)
						      ? "deleted" : "kept", file);
	return mcp_result_add_text(out, text);
}

/* multi_input: two confirmations asked at once. */
static int tool_multi_input(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args, (void)user;
	json_object *a = mcp_ctx_input_response(ctx, "first");
	json_object *b = mcp_ctx_input_response(ctx, "second");
	if (!a || !b) {
		int rc = ask_json(ctx, "first", "elicitation/create",
				  CONFIRM_FORM("Confirm the first step?"));
		if (rc == MCP_OK)
			rc = ask_json(ctx, "second", "elicitation/create",
				      CONFIRM_FORM("Confirm the second step?"));
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	return mcp_result_add_text(out, "both steps confirmed");
}

/* approve: asks for an approval with the blocking mcp_ctx_elicit, which
 * inside a 2026-07-28 task becomes the task's input_required (and in a
 * legacy session a real elicitation/create); a cancel while it waits
 * wakes it like any request. */
static int tool_approve(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	json_object *p = json_tokener_parse(CONFIRM_FORM("Approve the change?"));
	json_object *answer = NULL;
	int rc = p ? mcp_ctx_elicit(ctx, p, -1, &answer) : MCP_ENOMEM;
	json_object_put(p);
	if (rc == MCP_ECANCELED)
		return MCP_ECANCELED;
	if (rc != MCP_OK) {
		json_object_put(answer);
		return mcp_result_tool_error(out, "no approval: %s", mcp_strerror(rc));
	}
	json_object *yes = accepted(answer, "confirm");
	char text[256];
	snprintf(text, sizeof text, "%s: %.200s",
		 yes && json_object_get_boolean(yes) ? "approved" : "refused",
		 str_arg(args, "change", "change"));
	json_object_put(answer);
	return mcp_result_add_text(out, text);
}

/* test_tool_with_task: asks the user's name through input_required while
 * it is a plain request, then becomes a task and greets from there. */
static int tool_with_task(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args, (void)user;
	json_object *answer = mcp_ctx_input_response(ctx, "user_name");
	json_object *name = accepted(answer, "name");
	if (!name) {
		int rc = ask_json(ctx, "user_name", "elicitation/create",
				  "{\"mode\":\"form\",\"message\":\"What is your name?\","
				  "\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":"
				  "{\"type\":\"string\"}},\"required\":[\"name\"]}}");
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	/* The input is in: the long part runs as a task.  (ENOTSUP: a
	 * client that cannot take one; the call goes on plainly.) */
	int rc = mcp_ctx_become_task(ctx);
	if (rc != MCP_OK && rc != MCP_ENOTSUP)
		return rc;
	char text[256];
	snprintf(text, sizeof text, "Hello, %.200s!", json_object_get_string(name));
	if (mcp_ctx_sleep(ctx, 200) == MCP_ECANCELED)
		return MCP_ECANCELED;
	return mcp_result_add_text(out, text);
}

static const mcp_tool task_tools[] = {
	{ MCP_TOOL_INIT, .name = "greet", .title = "Greet",
	  .description = "Says hello; never runs as a task",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}",
	  .fn = tool_greet },
	{ MCP_TOOL_INIT, .name = "slow_compute", .title = "Slow computation",
	  .description = "Works for `seconds` seconds (cancellable), then answers; runs as a "
			 "task when the client can take one",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":\"number\","
			  "\"minimum\":0,\"maximum\":3600},\"label\":{\"type\":\"string\"}}}",
	  .fn = tool_slow_compute, .task_support = MCP_TASKS_OPTIONAL },
	{ MCP_TOOL_INIT, .name = "failing_job", .title = "Failing job",
	  .description = "Always ends with a tool error; runs only as a task",
	  .input_schema = "{\"type\":\"object\"}", .fn = tool_failing_job,
	  .task_support = MCP_TASKS_REQUIRED },
	{ MCP_TOOL_INIT, .name = "protocol_error_job", .title = "Protocol error job",
	  .description = "Always ends with a JSON-RPC internal error",
	  .input_schema = "{\"type\":\"object\"}", .fn = tool_protocol_error_job,
	  .task_support = MCP_TASKS_OPTIONAL },
	{ MCP_TOOL_INIT, .name = "confirm_delete", .title = "Confirm a deletion",
	  .description = "Asks the user to confirm, then reports what it did",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"filename\":{\"type\":"
			  "\"string\"}}}",
	  .fn = tool_confirm_delete, .task_support = MCP_TASKS_OPTIONAL },
	{ MCP_TOOL_INIT, .name = "multi_input", .title = "Two confirmations",
	  .description = "Asks for two confirmations at once",
	  .input_schema = "{\"type\":\"object\"}", .fn = tool_multi_input,
	  .task_support = MCP_TASKS_OPTIONAL },
	{ MCP_TOOL_INIT, .name = "approve", .title = "Ask for approval",
	  .description = "Asks the user to approve a change (a blocking elicitation), then "
			 "reports the answer",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"change\":{\"type\":"
			  "\"string\"}}}",
	  .fn = tool_approve, .task_support = MCP_TASKS_OPTIONAL },
	{ MCP_TOOL_INIT, .name = "test_tool_with_task", .title = "Input, then a task",
	  .description = "Asks the user's name through input_required, then becomes a task",
	  .input_schema = "{\"type\":\"object\"}", .fn = tool_with_task,
	  .task_support = MCP_TASKS_REQUIRED, .flags = MCP_TOOL_TASK_BY_HANDLER },
};

/* ---- MCP Apps ------------------------------------------------------------------ */

#define DICE_UI "ui://mcp-everything/dice"

/* The view: it gets the tool's result from the host (postMessage, MCP
 * Apps' ui/notifications/tool-result) and draws the faces.  Data never goes
 * into the HTML itself: a document built from tool input would let that
 * input script the host's sandbox. */
static const char dice_html[] =
	"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	"<title>Dice</title><style>body{font-family:sans-serif;margin:1em}"
	".die{display:inline-block;font-size:3em;margin:.1em}</style></head>"
	"<body><div id=\"faces\">Rolling\u2026</div><script>\n"
	"const faces = ['\u2680','\u2681','\u2682','\u2683','\u2684','\u2685'];\n"
	"window.addEventListener('message', (e) => {\n"
	"  const m = e.data;\n"
	"  if (!m || m.method !== 'ui/notifications/tool-result') return;\n"
	"  const rolls = (m.params.structuredContent || {}).rolls || [];\n"
	"  const box = document.getElementById('faces');\n"
	"  box.textContent = '';\n"
	"  for (const r of rolls) {\n"
	"    const s = document.createElement('span');\n"
	"    s.className = 'die';\n"
	"    s.textContent = faces[(r - 1) % 6];\n"
	"    box.appendChild(s);\n"
	"  }\n"
	"});\n"
	"window.parent.postMessage({jsonrpc:'2.0',id:1,method:'ui/initialize',params:{}}, '*');\n"
	"</script></body></html>\n";

/* dice {count?}: rolls `count` six-sided dice (from the kernel's random
 * source, so runs differ); text for the model, structured content for the
 * view. */
static int tool_dice(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx, (void)user;
	int64_t count = 2;
	mcp_args_int64(args, "count", &count);
	unsigned char bytes[10] = { 0 };
	if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes)
		return mcp_result_tool_error(out, "no random numbers available");
	json_object *rolls = json_object_new_array();
	char text[256] = "rolled";
	for (int64_t i = 0; i < count && i < 10; i++) {
		int face = 1 + bytes[i] % 6;
		json_object_array_add(rolls, json_object_new_int(face));
		size_t n = strlen(text);
		snprintf(text + n, sizeof text - n, " %d", face);
	}
	json_object *sc = json_object_new_object();
	json_object_object_add(sc, "rolls", rolls);
	mcp_result_set_structured(out, sc);
	return mcp_result_add_text(out, text);
}

static const mcp_tool dice_tool = { MCP_TOOL_INIT,
	.name = "dice", .title = "Roll dice",
	.description = "Rolls six-sided dice; hosts with MCP Apps show the roll in "
		       DICE_UI,
	.input_schema = "{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\","
			"\"minimum\":1,\"maximum\":10}}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"rolls\":{\"type\":\"array\","
			 "\"items\":{\"type\":\"integer\"}}},\"required\":[\"rolls\"]}",
	.fn = tool_dice,
};

static int register_app(mcp_server *srv)
{
	mcp_app *app = mcp_app_new(DICE_UI, "dice", dice_html);
	if (!app)
		return MCP_ENOMEM;
	int rc = mcp_app_set_title(app, "Dice");
	if (rc == MCP_OK)
		rc = mcp_app_set_description(app, "The faces of the last roll of the dice tool");
	if (rc == MCP_OK)
		rc = mcp_app_add_csp(app, MCP_APP_CSP_RESOURCE, "https://fonts.gstatic.com");
	if (rc == MCP_OK)
		rc = mcp_app_set_prefers_border(app, 1);
	if (rc == MCP_OK)
		rc = mcp_server_add_app(srv, app);
	mcp_app_free(app);
	if (rc == MCP_OK)
		rc = mcp_server_add_tool(srv, &dice_tool);
	if (rc == MCP_OK)
		rc = mcp_server_set_tool_ui(srv, "dice", DICE_UI, MCP_UI_MODEL | MCP_UI_APP);
	return rc;
}

/* ---- skills (SEP-2640) ---------------------------------------------------------- */

static const char git_skill_md[] =
	"---\n"
	"name: git-workflow\n"
	"description: >-\n"
	"  Follow this team's Git conventions for branches,\n"
	"  commits and pull requests\n"
	"license: MIT\n"
	"metadata:\n"
	"  version: \"1.2\"\n"
	"  reviewed: true\n"
	"---\n"
	"\n"
	"# Git workflow\n"
	"\n"
	"1. Branch from `main` as `topic/<what>`.\n"
	"2. Write commit messages as in `references/commits.md`.\n"
	"3. Open the pull request from the matching file in `templates/`.\n";

static const char refunds_skill_md[] =
	"---\n"
	"name: refunds\n"
	"description: 'Process customer refund requests per company policy'\n"
	"---\n"
	"\n"
	"Check the order, then follow `policy.md`.\n";

static int skill_files(mcp_skill *s, const char *const *files)
{
	int rc = MCP_OK;
	for (size_t i = 0; files[i] && rc == MCP_OK; i += 2)
		rc = mcp_skill_add_file(s, files[i], files[i + 1], strlen(files[i + 1]), NULL);
	return rc;
}

static int register_skill(mcp_server *srv, const char *prefix, const char *md,
			  const char *const *files)
{
	char why[256];
	mcp_skill *s = mcp_skill_new(prefix, md, strlen(md), why, sizeof why);
	if (!s) {
		fprintf(stderr, "mcp-everything: skill: %s\n", why[0] ? why : "out of memory");
		return MCP_EINVAL;
	}
	int rc = skill_files(s, files);
	if (rc != MCP_OK) {
		mcp_skill_free(s);
		return rc;
	}
	return mcp_server_add_skill(srv, s);
}

static int register_skills(mcp_server *srv)
{
	static const char *const git_files[] = {
		"references/commits.md",
		"# Commit messages\n\nOne line of at most 72 characters, then why.\n",
		"templates/pull-request.md", "## What\n\n## Why\n\n## How it was tested\n",
		"templates/regional/release-eu.md", "## Release notes (EU)\n",
		"scripts/check-branch.sh",
		"#!/bin/sh\ncase \"$(git branch --show-current)\" in topic/*) ;; *) exit 1 ;; esac\n",
		NULL
	};
	static const char *const refund_files[] = {
		"policy.md", "Refund within 30 days, with the receipt.\n", NULL
	};
	int rc = register_skill(srv, NULL, git_skill_md, git_files);
	if (rc == MCP_OK)
		rc = register_skill(srv, "acme/billing", refunds_skill_md, refund_files);
	return rc;
}

int everything_register_extensions(mcp_server *srv)
{
	if (!srv)
		return MCP_EINVAL;
	for (size_t i = 0; i < sizeof task_tools / sizeof task_tools[0]; i++) {
		int rc = mcp_server_add_tool(srv, &task_tools[i]);
		if (rc != MCP_OK)
			return rc;
	}
	int rc = register_app(srv);
	return rc == MCP_OK ? register_skills(srv) : rc;
}
