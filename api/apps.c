/*
 * apps.c - MCP Apps (the io.modelcontextprotocol/ui extension): UI
 * resources, HTML documents under ui:// served as text/html;profile=mcp-app
 * with the Content Security Policy origins and sandbox permissions the host
 * is to apply (_meta.ui), and the link from a tool to its UI
 * (_meta.ui.resourceUri, visibility) in tools/list.
 *
 * A UI resource is an ordinary resource of the registry (resources/list and
 * resources/read serve it), whose document and _meta are fixed when it is
 * registered.  The server declares the extension exactly while one is
 * registered.  Tool links are kept by tool name, apart from the tool
 * registrations, like scopes: they may be set before the tool exists and
 * outlive its removal.  Both live under the registry lock.
 */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "transport/tp.h"

#define CSP_KINDS 4
#define CSP_MAX 64 /* origins per directive */

static const char *const csp_keys[CSP_KINDS] = {
	"connectDomains", "resourceDomains", "frameDomains", "baseUriDomains",
};

static const struct {
	unsigned bit;
	const char *key;
} permission_keys[] = {
	{ MCP_APP_CAMERA, "camera" },
	{ MCP_APP_MICROPHONE, "microphone" },
	{ MCP_APP_GEOLOCATION, "geolocation" },
	{ MCP_APP_CLIPBOARD_WRITE, "clipboardWrite" },
};

struct mcp_app {
	char *uri, *name, *title, *description, *html, *domain;
	char **csp[CSP_KINDS];
	size_t ncsp[CSP_KINDS];
	unsigned permissions;
	int prefers_border; /* -1: unset */
};

static int utf8_text(const char *s)
{
	return tp_utf8_valid((const unsigned char *)s, strlen(s));
}

MCP_EXTERN mcp_app *mcp_app_new(const char *uri, const char *name, const char *html)
{
	if (!uri || strncmp(uri, "ui://", 5) != 0 || !uri[5] || !name || !*name || !html ||
	    !utf8_text(html) || !utf8_text(uri) || !utf8_text(name))
		return NULL;
	mcp_app *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->prefers_border = -1;
	a->uri = strdup(uri);
	a->name = strdup(name);
	a->html = strdup(html);
	if (!a->uri || !a->name || !a->html) {
		mcp_app_free(a);
		return NULL;
	}
	return a;
}

MCP_EXTERN void mcp_app_free(mcp_app *a)
{
	if (!a)
		return;
	free(a->uri);
	free(a->name);
	free(a->title);
	free(a->description);
	free(a->html);
	free(a->domain);
	for (int k = 0; k < CSP_KINDS; k++) {
		for (size_t i = 0; i < a->ncsp[k]; i++)
			free(a->csp[k][i]);
		free(a->csp[k]);
	}
	free(a);
}

static int set_str(char **slot, const char *v)
{
	char *c = NULL;
	if (v && (!utf8_text(v) || !(c = strdup(v))))
		return utf8_text(v) ? MCP_ENOMEM : MCP_EINVAL;
	free(*slot);
	*slot = c;
	return MCP_OK;
}

MCP_EXTERN int mcp_app_set_title(mcp_app *a, const char *title)
{
	return a ? set_str(&a->title, title) : MCP_EINVAL;
}

MCP_EXTERN int mcp_app_set_description(mcp_app *a, const char *text)
{
	return a ? set_str(&a->description, text) : MCP_EINVAL;
}

/* An origin as CSP source expressions write them: a scheme, "://", a host
 * (a leading "*." allowed) and maybe a port; nothing a host could take
 * for a keyword, a path or a second source. */
static int origin_valid(const char *o)
{
	const char *p = strstr(o, "://");
	if (!p || p == o)
		return 0;
	for (const char *q = o; q < p; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '+' ||
		      *q == '-' || *q == '.'))
			return 0;
	p += 3;
	if (p[0] == '*' && p[1] == '.')
		p += 2;
	if (!*p)
		return 0;
	for (; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.' || c == ':' || c == '[' || c == ']'))
			return 0;
	}
	return 1;
}

MCP_EXTERN int mcp_app_add_csp(mcp_app *a, mcp_app_csp kind, const char *origin)
{
	if (!a || (int)kind < 0 || kind >= CSP_KINDS || !origin || !origin_valid(origin))
		return MCP_EINVAL;
	if (a->ncsp[kind] == CSP_MAX)
		return MCP_EBUSY;
	for (size_t i = 0; i < a->ncsp[kind]; i++)
		if (strcmp(a->csp[kind][i], origin) == 0)
			return MCP_OK;
	char **g = realloc(a->csp[kind], (a->ncsp[kind] + 1) * sizeof *g);
	if (!g)
		return MCP_ENOMEM;
	a->csp[kind] = g;
	if (!(g[a->ncsp[kind]] = strdup(origin)))
		return MCP_ENOMEM;
	a->ncsp[kind]++;
	return MCP_OK;
}

MCP_EXTERN int mcp_app_request_permissions(mcp_app *a, unsigned permissions)
{
	unsigned all = MCP_APP_CAMERA | MCP_APP_MICROPHONE | MCP_APP_GEOLOCATION |
		       MCP_APP_CLIPBOARD_WRITE;
	if (!a || (permissions & ~all))
		return MCP_EINVAL;
	a->permissions = permissions;
	return MCP_OK;
}

MCP_EXTERN int mcp_app_set_domain(mcp_app *a, const char *domain)
{
	if (!a || (domain && (!*domain || strpbrk(domain, " \t\r\n/"))))
		return MCP_EINVAL;
	return set_str(&a->domain, domain);
}

MCP_EXTERN int mcp_app_set_prefers_border(mcp_app *a, int border)
{
	if (!a || border < -1 || border > 1)
		return MCP_EINVAL;
	a->prefers_border = border;
	return MCP_OK;
}

/* The _meta of the resource and of its contents: {"ui": {...}}. */
static json_object *ui_meta(const mcp_app *a)
{
	json_object *ui = json_object_new_object();
	json_object *csp = json_object_new_object();
	if (!ui || !csp) {
		json_object_put(ui);
		json_object_put(csp);
		return NULL;
	}
	for (int k = 0; k < CSP_KINDS; k++) {
		if (!a->ncsp[k])
			continue;
		json_object *arr = json_object_new_array();
		for (size_t i = 0; i < a->ncsp[k]; i++)
			eng_arr_add(arr, json_object_new_string(a->csp[k][i]));
		eng_obj_add(csp, csp_keys[k], arr);
	}
	if (json_object_object_length(csp))
		eng_obj_add(ui, "csp", csp);
	else
		json_object_put(csp);
	if (a->permissions) {
		json_object *perm = json_object_new_object();
		for (size_t i = 0; i < sizeof permission_keys / sizeof permission_keys[0]; i++)
			if (a->permissions & permission_keys[i].bit)
				eng_obj_add(perm, permission_keys[i].key, json_object_new_object());
		eng_obj_add(ui, "permissions", perm);
	}
	if (a->domain)
		eng_obj_add(ui, "domain", json_object_new_string(a->domain));
	if (a->prefers_border >= 0)
		eng_obj_add(ui, "prefersBorder", json_object_new_boolean(a->prefers_border));
	json_object *meta = json_object_new_object();
	if (eng_obj_add(meta, "ui", ui)) {
		json_object_put(meta);
		return NULL;
	}
	return meta;
}

/* What a registered UI resource keeps: its document and its _meta. */
typedef struct app_doc {
	char *html;
	json_object *meta; /* read-only once registered */
} app_doc;

static void app_doc_free(void *p)
{
	app_doc *d = p;
	free(d->html);
	json_object_put(d->meta);
	free(d);
}

static int app_read(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
		    void *user)
{
	(void)ctx, (void)vars;
	app_doc *d = user;
	return api_contents_add_item(out, uri, MCP_APP_MIME, d->html, strlen(d->html), 1,
				     d->meta);
}

MCP_EXTERN int mcp_server_add_app(mcp_server *srv, const mcp_app *a)
{
	if (!srv || !a)
		return MCP_EINVAL;
	app_doc *d = calloc(1, sizeof *d);
	if (!d)
		return MCP_ENOMEM;
	d->html = strdup(a->html);
	d->meta = ui_meta(a);
	json_object *listed = d->meta ? api_json_copy(d->meta) : NULL;
	if (!d->html || !d->meta || !listed) {
		json_object_put(listed);
		app_doc_free(d);
		return MCP_ENOMEM;
	}
	return api_resource_add_owned(srv, a->uri, a->name, a->title, a->description,
				      MCP_APP_MIME, (int64_t)strlen(a->html), app_read, d,
				      app_doc_free, listed, 0);
}

int api_apps_offered(mcp_server *srv)
{
	int offered = 0;
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->resources.n && !offered; i++) {
		api_resource_entry *r = (api_resource_entry *)srv->resources.items[i];
		offered = r->mime_type && strcmp(r->mime_type, MCP_APP_MIME) == 0 &&
			  strncmp(r->base.key, "ui://", 5) == 0;
	}
	pthread_rwlock_unlock(&srv->reg_lock);
	return offered;
}

/* ---- tool links ------------------------------------------------------------ */

typedef struct tool_ui {
	char *tool, *uri;
	unsigned visibility;
} tool_ui;

MCP_EXTERN int mcp_server_set_tool_ui(mcp_server *srv, const char *tool, const char *uri,
				      unsigned visibility)
{
	if (!srv || !tool || !*tool || (uri && (strncmp(uri, "ui://", 5) != 0 || !uri[5] ||
						!utf8_text(uri))) ||
	    (visibility & ~(unsigned)(MCP_UI_MODEL | MCP_UI_APP)))
		return MCP_EINVAL;
	char *t = strdup(tool), *u = uri ? strdup(uri) : NULL;
	if (!t || (uri && !u)) {
		free(t);
		free(u);
		return MCP_ENOMEM;
	}
	pthread_rwlock_wrlock(&srv->reg_lock);
	size_t i = 0;
	while (i < srv->ntool_ui && strcmp(srv->tool_ui[i].tool, tool) != 0)
		i++;
	int rc = MCP_OK;
	if (i == srv->ntool_ui && uri) {
		tool_ui *g = realloc(srv->tool_ui, (srv->ntool_ui + 1) * sizeof *g);
		if (g) {
			srv->tool_ui = g;
			g[i] = (tool_ui){ t, u, visibility };
			srv->ntool_ui++;
			t = u = NULL;
		} else {
			rc = MCP_ENOMEM;
		}
	} else if (i < srv->ntool_ui && uri) {
		free(srv->tool_ui[i].uri);
		srv->tool_ui[i].uri = u;
		srv->tool_ui[i].visibility = visibility;
		u = NULL;
	} else if (i < srv->ntool_ui) {
		free(srv->tool_ui[i].tool);
		free(srv->tool_ui[i].uri);
		srv->tool_ui[i] = srv->tool_ui[--srv->ntool_ui];
	}
	int listed = 0;
	for (size_t k = 0; k < srv->tools.n && !listed; k++)
		listed = strcmp(srv->tools.items[k]->key, tool) == 0;
	pthread_rwlock_unlock(&srv->reg_lock);
	free(t);
	free(u);
	/* The tool's entry in tools/list changed. */
	if (rc == MCP_OK && listed)
		api_notify_list_changed(srv, API_KIND_TOOLS);
	return rc;
}

json_object *api_tool_ui_meta(mcp_server *srv, const char *tool)
{
	for (size_t i = 0; i < srv->ntool_ui; i++) {
		if (strcmp(srv->tool_ui[i].tool, tool) != 0)
			continue;
		json_object *ui = json_object_new_object();
		eng_obj_add(ui, "resourceUri", json_object_new_string(srv->tool_ui[i].uri));
		unsigned v = srv->tool_ui[i].visibility;
		if (v) {
			json_object *arr = json_object_new_array();
			if (v & MCP_UI_MODEL)
				eng_arr_add(arr, json_object_new_string("model"));
			if (v & MCP_UI_APP)
				eng_arr_add(arr, json_object_new_string("app"));
			eng_obj_add(ui, "visibility", arr);
		}
		return ui;
	}
	return NULL;
}

void api_apps_free(mcp_server *srv)
{
	for (size_t i = 0; i < srv->ntool_ui; i++) {
		free(srv->tool_ui[i].tool);
		free(srv->tool_ui[i].uri);
	}
	free(srv->tool_ui);
	srv->tool_ui = NULL;
	srv->ntool_ui = 0;
}
