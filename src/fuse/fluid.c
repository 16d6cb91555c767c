/* fluid.c - mount from Fluid's ThinRuntime config.json (see fluid.h).
 *
 * Fluid hands the FUSE container /etc/fluid/config/config.json (Fluid >= 1.1; before that
 * /etc/fluid/config.json): mounts[0].mountPoint names the file system, targetPath is where
 * to mount, accessModes / mounts[0].readOnly say read-only, options and runtimeOptions are
 * mount options, and options whose value is a file under /etc/fluid/secrets/ hold the value
 * in that file. We turn that into an ordinary foreground nacre-mount command and exec it, so
 * the mount code path is the one every other mount takes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "fuse/fluid.h"

#define CONF_MAX (1 << 20)
#define OPTS_MAX 8192
#define SECRET_MAX 4096

struct fluid {
	char conf[1024];       /* the config file read */
	char etc[512];         /* /etc/fluid, or $NACRE_FLUID_ETC in tests */
	char spec[4096];       /* nacre-mount SPEC */
	char target[4096];     /* targetPath */
	int ro;
	char opts[OPTS_MAX];   /* -o list given to nacre-mount */
	char shown[OPTS_MAX];  /* the same with secret values masked, for --dry-run */
};

static int append(char *buf, size_t len, const char *s)
{
	size_t n = strlen(buf);

	if (n + strlen(s) + 2 > len)
		return -1;
	snprintf(buf + n, len - n, "%s%s", n ? "," : "", s);
	return 0;
}

static char *read_file(const char *path, size_t max, size_t *out_len)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = malloc(max + 1);
	if (!buf) {
		fclose(f);
		errno = ENOMEM;
		return NULL;
	}
	n = fread(buf, 1, max + 1, f);
	fclose(f);
	if (n > max) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	if (out_len)
		*out_len = n;
	return buf;
}

/* Line and column of offset in text, for JSON error messages. */
static void line_col(const char *text, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* mountPoint -> SPEC. nacre://host[:port]/fsname[/subdir] becomes host[:port]:/fsname[/subdir];
 * the Lustre form host@tcp[:port]:/fsname[/subdir] is taken as it is. */
static int mount_point_to_spec(const char *mp, char *spec, size_t len, char *err, size_t elen)
{
	if (strncmp(mp, "nacre://", 8) == 0) {
		const char *host = mp + 8;
		const char *slash = strchr(host, '/');

		if (!slash || slash == host || slash[1] == '\0') {
			snprintf(err, elen, "mountPoint '%s': write nacre://MDS-HOST[:PORT]/FSNAME[/SUBDIR]",
				 mp);
			return -1;
		}
		if ((size_t)snprintf(spec, len, "%.*s:%s", (int)(slash - host), host, slash) >= len)
			goto too_long;
		return 0;
	}
	if (strstr(mp, ":/") && !strstr(mp, "://")) {
		if (str_copy(spec, mp, len) >= len)
			goto too_long;
		return 0;
	}
	snprintf(err, elen, "mountPoint '%s' is not a nacre file system: write "
			    "nacre://MDS-HOST[:PORT]/FSNAME[/SUBDIR] or MDS-HOST@tcp:/FSNAME[/SUBDIR]", mp);
	return -1;
too_long:
	snprintf(err, elen, "mountPoint too long");
	return -1;
}

/* Adds one option from Fluid's options maps. A value naming a file under ETC/secrets/ is
 * replaced by the file's content, except for key_file, which nacre-mount reads itself. */
static int add_option(struct fluid *fl, const char *key, const cJSON *val, char *err,
		      size_t elen)
{
	char item[OPTS_MAX], shown[OPTS_MAX], secrets[600];
	const char *v;

	if (cJSON_IsBool(val)) {
		if (cJSON_IsTrue(val) && (append(fl->opts, sizeof(fl->opts), key) < 0 ||
					  append(fl->shown, sizeof(fl->shown), key) < 0))
			goto too_long;
		return 0;
	}
	if (cJSON_IsNumber(val)) {
		snprintf(item, sizeof(item), "%s=%g", key, val->valuedouble);
		if (append(fl->opts, sizeof(fl->opts), item) < 0 ||
		    append(fl->shown, sizeof(fl->shown), item) < 0)
			goto too_long;
		return 0;
	}
	if (!cJSON_IsString(val)) {
		snprintf(err, elen, "option '%s': give a string, number or boolean", key);
		return -1;
	}
	v = val->valuestring;
	snprintf(secrets, sizeof(secrets), "%s/secrets/", fl->etc);
	if (strncmp(v, secrets, strlen(secrets)) == 0 && strcmp(key, "key_file") != 0) {
		size_t n;
		char *s = read_file(v, SECRET_MAX, &n);

		if (!s) {
			snprintf(err, elen, "option '%s': cannot read the secret file %s: %s", key, v,
				 strerror(errno));
			return -1;
		}
		while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
			s[--n] = '\0';
		if (strpbrk(s, ",\n")) {
			snprintf(err, elen, "option '%s': the secret in %s holds a comma or newline, "
					    "which a mount option cannot carry", key, v);
			free(s);
			return -1;
		}
		snprintf(item, sizeof(item), "%s=%s", key, s);
		snprintf(shown, sizeof(shown), "%s=<secret from %s>", key, v);
		free(s);
	} else {
		if (strchr(v, ',')) {
			snprintf(err, elen, "option '%s': value '%s' holds a comma", key, v);
			return -1;
		}
		snprintf(item, sizeof(item), "%s%s%s", key, v[0] ? "=" : "", v);
		str_copy(shown, item, sizeof(shown));
	}
	if (append(fl->opts, sizeof(fl->opts), item) < 0 ||
	    append(fl->shown, sizeof(fl->shown), shown) < 0)
		goto too_long;
	return 0;
too_long:
	snprintf(err, elen, "too many options");
	return -1;
}

/* Dataset options win over the runtime's: they are the more specific. */
static int add_options(struct fluid *fl, const cJSON *mount_opts, const cJSON *runtime_opts,
		       char *err, size_t elen)
{
	const cJSON *o;

	cJSON_ArrayForEach(o, mount_opts) {
		if (add_option(fl, o->string, o, err, elen) < 0)
			return -1;
	}
	cJSON_ArrayForEach(o, runtime_opts) {
		if (mount_opts && cJSON_GetObjectItemCaseSensitive(mount_opts, o->string))
			continue;
		if (add_option(fl, o->string, o, err, elen) < 0)
			return -1;
	}
	return 0;
}

static int parse_config(struct fluid *fl, const char *text, char *err, size_t elen)
{
	const char *errpos = NULL;
	cJSON *root = cJSON_ParseWithOpts(text, &errpos, 1);
	const cJSON *mounts, *m0, *mp, *tp, *am, *ro;
	char why[600];
	int rc = -1;

	if (!root) {
		int line, col;

		line_col(text, errpos ? (size_t)(errpos - text) : 0, &line, &col);
		snprintf(err, elen, "%s:%d:%d: not valid JSON", fl->conf, line, col);
		return -1;
	}
	mounts = cJSON_GetObjectItemCaseSensitive(root, "mounts");
	if (!cJSON_IsArray(mounts) || cJSON_GetArraySize(mounts) < 1) {
		snprintf(err, elen, "%s: no mounts[] (Fluid puts the Dataset's mounts there)", fl->conf);
		goto out;
	}
	if (cJSON_GetArraySize(mounts) > 1)
		fprintf(stderr, "nacre-mount: %s has %d mounts: only mounts[0] is mounted\n", fl->conf,
			cJSON_GetArraySize(mounts));
	m0 = cJSON_GetArrayItem(mounts, 0);
	mp = cJSON_GetObjectItemCaseSensitive(m0, "mountPoint");
	if (!cJSON_IsString(mp)) {
		snprintf(err, elen, "%s: mounts[0].mountPoint is missing", fl->conf);
		goto out;
	}
	if (mount_point_to_spec(mp->valuestring, fl->spec, sizeof(fl->spec), why, sizeof(why)) < 0) {
		snprintf(err, elen, "%s: %s", fl->conf, why);
		goto out;
	}
	tp = cJSON_GetObjectItemCaseSensitive(root, "targetPath");
	if (!cJSON_IsString(tp) || tp->valuestring[0] != '/') {
		snprintf(err, elen, "%s: targetPath is missing or not an absolute path", fl->conf);
		goto out;
	}
	str_copy(fl->target, tp->valuestring, sizeof(fl->target));
	/* Read-only if the volume can only be read (ReadOnlyMany alone) or the mount says so. */
	am = cJSON_GetObjectItemCaseSensitive(root, "accessModes");
	if (cJSON_IsArray(am) && cJSON_GetArraySize(am) > 0) {
		const cJSON *mode;
		int writable = 0;

		cJSON_ArrayForEach(mode, am) {
			if (cJSON_IsString(mode) && strncmp(mode->valuestring, "ReadWrite", 9) == 0)
				writable = 1;
		}
		fl->ro = !writable;
	}
	ro = cJSON_GetObjectItemCaseSensitive(m0, "readOnly");
	if (cJSON_IsTrue(ro))
		fl->ro = 1;
	if (fl->ro) {
		append(fl->opts, sizeof(fl->opts), "ro");
		append(fl->shown, sizeof(fl->shown), "ro");
	}
	const cJSON *mo = cJSON_GetObjectItemCaseSensitive(m0, "options");
	const cJSON *rto = cJSON_GetObjectItemCaseSensitive(root, "runtimeOptions");

	if (add_options(fl, cJSON_IsObject(mo) ? mo : NULL, cJSON_IsObject(rto) ? rto : NULL, why,
			sizeof(why)) < 0) {
		snprintf(err, elen, "%s: %s", fl->conf, why);
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

int fz_fluid_wanted(int argc, char **argv)
{
	return argc >= 2 && strcmp(argv[1], "--fluid-config") == 0;
}

int fz_fluid_main(int argc, char **argv)
{
	static struct fluid fl;
	const char *path = NULL, *env = getenv("NACRE_FLUID_ETC");
	char err[2048];
	int dry = 0;
	struct stat st;

	memset(&fl, 0, sizeof(fl));
	str_copy(fl.etc, env && env[0] ? env : "/etc/fluid", sizeof(fl.etc));
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--dry-run") == 0)
			dry = 1;
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else {
			fprintf(stderr, "nacre-mount: --fluid-config: unexpected argument '%s'\n"
					"usage: nacre-mount --fluid-config [PATH] [--dry-run]\n", argv[i]);
			return 1;
		}
	}
	if (path) {
		str_copy(fl.conf, path, sizeof(fl.conf));
	} else {
		/* Fluid >= 1.1 first, then the older place. */
		snprintf(fl.conf, sizeof(fl.conf), "%s/config/config.json", fl.etc);
		if (access(fl.conf, F_OK) < 0)
			snprintf(fl.conf, sizeof(fl.conf), "%s/config.json", fl.etc);
	}
	char *text = read_file(fl.conf, CONF_MAX, NULL);

	if (!text) {
		if (path)
			fprintf(stderr, "nacre-mount: cannot read the Fluid config %s: %s\n", fl.conf,
				strerror(errno));
		else
			fprintf(stderr, "nacre-mount: no Fluid config: neither %s/config/config.json "
					"nor %s/config.json can be read (%s)\n",
				fl.etc, fl.etc, strerror(errno));
		return 1;
	}
	int rc = parse_config(&fl, text, err, sizeof(err));

	free(text);
	if (rc < 0) {
		fprintf(stderr, "nacre-mount: %s\n", err);
		return 1;
	}
	if (dry) {
		printf("config: %s\nspec: %s\ntarget: %s\nread-only: %s\noptions: %s\n"
		       "command: nacre-mount %s %s -o %s -f\n",
		       fl.conf, fl.spec, fl.target, fl.ro ? "yes" : "no", fl.shown, fl.spec,
		       fl.target, fl.shown[0] ? fl.shown : "defaults");
		return 0;
	}
	/* A previous container that died leaves a dead FUSE mount: clear it first. */
	if (stat(fl.target, &st) < 0 && errno == ENOTCONN)
		umount2(fl.target, MNT_DETACH);
	rc = mkdir_p(fl.target, 0755);
	if (rc < 0) {
		fprintf(stderr, "nacre-mount: cannot create targetPath %s: %s\n", fl.target,
			strerror(-rc));
		return 1;
	}
	fprintf(stderr, "nacre-mount: Fluid config %s: mounting %s on %s%s\n", fl.conf, fl.spec,
		fl.target, fl.ro ? " read-only" : "");
	char *nargv[] = {"nacre-mount", fl.spec,  fl.target, "-o",
			 fl.opts[0] ? fl.opts : "defaults", "-f", NULL};

	/* The same process (the container's main one) becomes the foreground mount. */
	execv("/proc/self/exe", nargv);
	fprintf(stderr, "nacre-mount: cannot re-execute itself: %s\n", strerror(errno));
	return 1;
}
