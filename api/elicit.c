/*
 * elicit.c - elicitation: the form builder for every field kind of
 * 2025-11-25, form and URL mode requests with their capability checks, the
 * elicitation/complete notification and the -32042 error.
 *
 * The schema is assembled as json-c objects owned by the form; sending a
 * form deep-copies it, so one form may be reused by several handlers only
 * if they do not share it across threads at the same time.
 */
#include <stdlib.h>
#include <string.h>

#include "api/desc.h"
#include "api/internal.h"
#include "api/jschema/jschema.h"

struct mcp_form {
	char *message;
	json_object *schema;      /* {type, properties, required?} */
	int min_rev;              /* oldest revision whose schema allows it */
};

MCP_EXTERN mcp_form *mcp_form_new(const char *message)
{
	if (!message)
		return NULL;
	mcp_form *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->message = strdup(message);
	f->schema = json_object_new_object();
	json_object *props = json_object_new_object();
	if (!f->message || !f->schema || !props) {
		json_object_put(props);
		mcp_form_free(f);
		return NULL;
	}
	eng_obj_add(f->schema, "type", json_object_new_string("object"));
	eng_obj_add(f->schema, "properties", props);
	return f;
}

MCP_EXTERN void mcp_form_free(mcp_form *form)
{
	if (!form)
		return;
	free(form->message);
	json_object_put(form->schema);
	free(form);
}

MCP_EXTERN json_object *mcp_form_schema(const mcp_form *form)
{
	return form ? form->schema : NULL;
}

static json_object *string_array(const char *const *v, size_t n)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < n; i++) {
		if (!v[i]) {
			json_object_put(a);
			return NULL;
		}
		eng_arr_add(a, json_object_new_string(v[i]));
	}
	return a;
}

/* [{const, title}, ...] for the titled enum styles. */
static json_object *titled_options(const mcp_field *f)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < f->noptions; i++) {
		if (!f->options[i] || !f->option_titles[i]) {
			json_object_put(a);
			return NULL;
		}
		json_object *o = json_object_new_object();
		eng_obj_add(o, "const", json_object_new_string(f->options[i]));
		eng_obj_add(o, "title", json_object_new_string(f->option_titles[i]));
		eng_arr_add(a, o);
	}
	return a;
}

static int is_option(const mcp_field *f, const char *v)
{
	for (size_t i = 0; v && i < f->noptions; i++)
		if (f->options[i] && strcmp(f->options[i], v) == 0)
			return 1;
	return 0;
}

/* Builds the property schema of one field, or NULL when it is invalid. */
static json_object *field_schema(const mcp_field *f)
{
	json_object *p = json_object_new_object();
	if (!p)
		return NULL;
	switch (f->kind) {
	case MCP_FIELD_STRING:
		if (f->format && strcmp(f->format, "email") && strcmp(f->format, "uri") &&
		    strcmp(f->format, "date") && strcmp(f->format, "date-time"))
			goto bad;
		eng_obj_add(p, "type", json_object_new_string("string"));
		api_json_add_str(p, "format", f->format);
		if (f->has_lengths && f->min_length >= 0)
			eng_obj_add(p, "minLength", json_object_new_int64(f->min_length));
		if (f->has_lengths && f->max_length >= 0)
			eng_obj_add(p, "maxLength", json_object_new_int64(f->max_length));
		if (f->has_default) {
			if (!f->default_string)
				goto bad;
			eng_obj_add(p, "default", json_object_new_string(f->default_string));
		}
		break;
	case MCP_FIELD_NUMBER:
	case MCP_FIELD_INTEGER: {
		int integer = f->kind == MCP_FIELD_INTEGER;
		eng_obj_add(p, "type", json_object_new_string(integer ? "integer" : "number"));
		if (f->has_minimum)
			eng_obj_add(p, "minimum", integer
				? json_object_new_int64((int64_t)f->minimum)
				: json_object_new_double(f->minimum));
		if (f->has_maximum)
			eng_obj_add(p, "maximum", integer
				? json_object_new_int64((int64_t)f->maximum)
				: json_object_new_double(f->maximum));
		if (f->has_default)
			eng_obj_add(p, "default", integer
				? json_object_new_int64((int64_t)f->default_number)
				: json_object_new_double(f->default_number));
		break;
	}
	case MCP_FIELD_BOOLEAN:
		eng_obj_add(p, "type", json_object_new_string("boolean"));
		if (f->has_default)
			eng_obj_add(p, "default", json_object_new_boolean(f->default_bool));
		break;
	case MCP_FIELD_ENUM: {
		if (!f->options || f->noptions == 0 ||
		    (f->style != MCP_ENUM_UNTITLED && !f->option_titles))
			goto bad;
		eng_obj_add(p, "type", json_object_new_string("string"));
		json_object *opts = f->style == MCP_ENUM_TITLED ? titled_options(f)
								: string_array(f->options, f->noptions);
		if (!opts)
			goto bad;
		eng_obj_add(p, f->style == MCP_ENUM_TITLED ? "oneOf" : "enum", opts);
		if (f->style == MCP_ENUM_LEGACY) {
			json_object *names = string_array(f->option_titles, f->noptions);
			if (!names)
				goto bad;
			eng_obj_add(p, "enumNames", names);
		}
		if (f->has_default) {
			if (!is_option(f, f->default_string))
				goto bad;
			eng_obj_add(p, "default", json_object_new_string(f->default_string));
		}
		break;
	}
	case MCP_FIELD_MULTI_ENUM: {
		if (!f->options || f->noptions == 0 || f->style == MCP_ENUM_LEGACY ||
		    (f->style == MCP_ENUM_TITLED && !f->option_titles))
			goto bad;
		eng_obj_add(p, "type", json_object_new_string("array"));
		json_object *items = json_object_new_object();
		eng_obj_add(p, "items", items);
		if (f->style == MCP_ENUM_TITLED) {
			json_object *opts = titled_options(f);
			if (!opts)
				goto bad;
			eng_obj_add(items, "anyOf", opts);
		} else {
			json_object *opts = string_array(f->options, f->noptions);
			if (!opts)
				goto bad;
			eng_obj_add(items, "type", json_object_new_string("string"));
			eng_obj_add(items, "enum", opts);
		}
		if (f->has_items && f->min_items >= 0)
			eng_obj_add(p, "minItems", json_object_new_int64(f->min_items));
		if (f->has_items && f->max_items >= 0)
			eng_obj_add(p, "maxItems", json_object_new_int64(f->max_items));
		if (f->has_default) {
			if (f->ndefault_options && !f->default_options)
				goto bad;
			for (size_t i = 0; i < f->ndefault_options; i++)
				if (!is_option(f, f->default_options[i]))
					goto bad;
			eng_obj_add(p, "default",
					       string_array(f->default_options, f->ndefault_options));
		}
		break;
	}
	default:
		goto bad;
	}
	api_json_add_str(p, "title", f->title);
	api_json_add_str(p, "description", f->description);
	return p;
bad:
	json_object_put(p);
	return NULL;
}

MCP_EXTERN int mcp_form_add(mcp_form *form, const mcp_field *caller)
{
	mcp_field desc;
	if (!form)
		return MCP_EINVAL;
	int drc = desc_read(&desc, sizeof desc, caller, DESC_FIELD_V1);
	if (drc != MCP_OK)
		return drc;
	const mcp_field *field = &desc;
	if (!field->name || !*field->name)
		return MCP_EINVAL;
	json_object *props = NULL;
	json_object_object_get_ex(form->schema, "properties", &props);
	if (json_object_object_get_ex(props, field->name, NULL))
		return MCP_EEXIST;
	json_object *p = field_schema(field);
	if (!p)
		return MCP_EINVAL;
	if (eng_obj_add(props, field->name, p))
		return MCP_ENOMEM;
	/* Multi-select fields exist from 2025-11-25; older schemas allow only
	 * primitive fields. */
	if (field->kind == MCP_FIELD_MULTI_ENUM && form->min_rev < API_REV_2025_11_25)
		form->min_rev = API_REV_2025_11_25;
	if (field->required) {
		json_object *req = NULL;
		if (!json_object_object_get_ex(form->schema, "required", &req)) {
			req = json_object_new_array();
			if (!req)
				return MCP_ENOMEM;
			eng_obj_add(form->schema, "required", req);
		}
		eng_arr_add(req, json_object_new_string(field->name));
	}
	return MCP_OK;
}

MCP_EXTERN int mcp_ctx_elicit_form(mcp_ctx *ctx, const mcp_form *form, int64_t timeout_ms,
				   json_object **result)
{
	if (result)
		*result = NULL;
	if (!ctx || !form || !result)
		return MCP_EINVAL;
	if (ctx->view.rev < form->min_rev)
		return MCP_ENOTSUP; /* the client's revision cannot express it */
	json_object *params = json_object_new_object();
	json_object *schema = api_json_copy(form->schema);
	if (!params || !schema) {
		json_object_put(params);
		json_object_put(schema);
		return MCP_ENOMEM;
	}
	eng_obj_add(params, "mode", json_object_new_string("form"));
	eng_obj_add(params, "message", json_object_new_string(form->message));
	eng_obj_add(params, "requestedSchema", schema);
	return api_elicit_checked(ctx, params, form->schema, timeout_ms, result);
}

MCP_EXTERN int mcp_ctx_elicit_url(mcp_ctx *ctx, const char *message, const char *url,
				  const char *elicitation_id, int64_t timeout_ms,
				  json_object **result)
{
	if (result)
		*result = NULL;
	if (!ctx || !message || !url || !elicitation_id || !result)
		return MCP_EINVAL;
	json_object *params = json_object_new_object();
	if (!params)
		return MCP_ENOMEM;
	eng_obj_add(params, "mode", json_object_new_string("url"));
	eng_obj_add(params, "message", json_object_new_string(message));
	eng_obj_add(params, "url", json_object_new_string(url));
	eng_obj_add(params, "elicitationId", json_object_new_string(elicitation_id));
	/* Remembered before sending: the user may finish before the client
	 * even answers the request. */
	api_sess_remember_elicitation(ctx->sess, elicitation_id);
	int rc = api_elicit_send(ctx, params, timeout_ms, result);
	/* Never sent: nothing will complete it.  (A close is reported as
	 * MCP_ECANCELED, like any cancellation.) */
	if (rc == MCP_ENOTSUP || rc == MCP_ESTATE)
		api_sess_forget_elicitation(ctx->sess, elicitation_id);
	return rc;
}

MCP_EXTERN int mcp_server_elicitation_complete(mcp_server *srv, const char *elicitation_id)
{
	if (!srv || !elicitation_id)
		return MCP_EINVAL;
	int rc = MCP_ENOENT;
	pthread_mutex_lock(&srv->sess_mu);
	for (api_sess *ms = srv->sessions; ms && rc == MCP_ENOENT; ms = ms->next) {
		if (!api_sess_forget_elicitation(ms, elicitation_id))
			continue;
		json_object *n = json_object_new_object();
		json_object *p = json_object_new_object();
		eng_obj_add(n, "jsonrpc", json_object_new_string("2.0"));
		eng_obj_add(n, "method",
				       json_object_new_string("notifications/elicitation/complete"));
		eng_obj_add(p, "elicitationId", json_object_new_string(elicitation_id));
		eng_obj_add(n, "params", p);
		rc = eng_session_notify(ms->es, n) == MCP_OK ? MCP_OK : MCP_ENOENT;
	}
	pthread_mutex_unlock(&srv->sess_mu);
	return rc;
}

MCP_EXTERN int mcp_result_set_url_elicitation_required(mcp_result *out, const char *message,
						       const char *url,
						       const char *elicitation_id)
{
	if (!out || !message || !url || !elicitation_id)
		return MCP_EINVAL;
	json_object *e = json_object_new_object();
	json_object *list = json_object_new_array();
	json_object *data = json_object_new_object();
	if (!e || !list || !data) {
		json_object_put(e);
		json_object_put(list);
		json_object_put(data);
		return MCP_ENOMEM;
	}
	eng_obj_add(e, "mode", json_object_new_string("url"));
	eng_obj_add(e, "message", json_object_new_string(message));
	eng_obj_add(e, "url", json_object_new_string(url));
	eng_obj_add(e, "elicitationId", json_object_new_string(elicitation_id));
	eng_arr_add(list, e);
	eng_obj_add(data, "elicitations", list);
	return mcp_result_set_error(out, MCP_JSONRPC_URL_ELICITATION_REQUIRED,
				    "URL elicitation required", data);
}
