/* outfile.c: output files written as one transaction (see outfile.h):
 * temporaries beside regular targets, renamed only once every file was
 * written; non-regular targets (stdout, devices, FIFOs, pipes) written in
 * place; a launch directory's manifest; cleanup on a signal. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE	700 /* realpath */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "util.h"

enum kind {
	K_REPLACE, /* a regular file or a missing path: temporary + rename */
	K_STDOUT,  /* "-", or the file stdout is open on: written to stdout */
	K_INPLACE, /* a device, FIFO, socket or pipe: opened and written */
	K_BAD,	   /* cannot be written (a directory, ...): msg says why */
};

struct entry {
	char *path;		    /* as given */
	char *target;		    /* K_REPLACE: the file to replace (links resolved) */
	char *tmp;		    /* K_REPLACE: the temporary's name */
	volatile sig_atomic_t live; /* tmp exists (the signal handler reads it) */
	char *text;		    /* the content, or NULL for a writer's */
	size_t len;
	outfile_writer write; /* else: writes the content */
	void *arg;
	void (*free_arg)(void *);
	long long written; /* bytes the commit wrote, -1 before */
	unsigned mode;
	bool keep_mode; /* replaces a regular file: its mode old_mode */
	mode_t old_mode;
	enum kind kind;
	const char *why; /* K_BAD: the reason */
	bool have_id;	 /* the path exists: dev, ino identify it */
	dev_t dev;
	ino_t ino;
	char *key; /* a missing path: resolved directory + "/" + name */
};

struct outfile_set {
	struct entry *f;
	int n, cap;
	char **dir; /* outfile_mkdir */
	int n_dir;
	char **made; /* directories commit created, in creation order; room
			for every component of dir[] before it starts */
	volatile sig_atomic_t n_made;
	bool conflict;
	char *own_dir; /* outfile_manifest: the launch directory */
	int n_owned;   /* its files are among f[0..n_owned) */
	bool force;
	char **stale; /* files of the old manifest to remove after commit */
	int n_stale;
};

struct outfile_set *outfile_create(void)
{
	return xcalloc(1, sizeof(struct outfile_set));
}

/* SIGINT, SIGTERM, SIGHUP: the ones outfile_commit cleans up after. */
static const int cleanup_signal[] = { SIGINT, SIGTERM, SIGHUP };
#define N_CLEANUP (sizeof cleanup_signal / sizeof cleanup_signal[0])

/* The set being committed, for the handler (NULL outside a commit). */
static struct outfile_set *volatile committing;

/* Removes the live temporaries and the directories created, newest first;
 * async-signal-safe (unlink, rmdir; nothing allocated or freed). */
static void remove_made(struct outfile_set *t)
{
	for (int i = 0; i < t->n; i++)
		if (t->f[i].live)
			unlink(t->f[i].tmp);
	for (int i = t->n_made - 1; i >= 0; i--)
		rmdir(t->made[i]);
}

/* The handler of cleanup_signal during a commit: removes what the commit
 * made, then lets the signal end the process (SA_RESETHAND restored the
 * default action; the signal is delivered again when this returns). */
static void on_signal(int sig)
{
	struct outfile_set *t = committing;

	if (t)
		remove_made(t);
	raise(sig);
}

/* Blocks (block) or unblocks the cleanup signals: the handler sees the
 * list of temporaries and directories only between two consistent states. */
static void hold_signals(bool block)
{
	sigset_t s;

	sigemptyset(&s);
	for (size_t i = 0; i < N_CLEANUP; i++)
		sigaddset(&s, cleanup_signal[i]);
	pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
}

/* Removes the temporaries and then the directories created, newest first. */
static void roll_back(struct outfile_set *t)
{
	hold_signals(true);
	remove_made(t);
	for (int i = 0; i < t->n; i++) {
		free(t->f[i].tmp);
		t->f[i].tmp = NULL;
		t->f[i].live = 0;
	}
	for (int i = t->n_made - 1; i >= 0; i--)
		free(t->made[i]);
	t->n_made = 0;
	hold_signals(false);
}

void outfile_free(struct outfile_set *t)
{
	if (!t)
		return;
	roll_back(t);
	for (int i = 0; i < t->n; i++) {
		free(t->f[i].path);
		free(t->f[i].target);
		free(t->f[i].text);
		free(t->f[i].key);
		if (t->f[i].free_arg)
			t->f[i].free_arg(t->f[i].arg);
	}
	for (int i = 0; i < t->n_dir; i++)
		free(t->dir[i]);
	for (int i = 0; i < t->n_stale; i++)
		free(t->stale[i]);
	free(t->f);
	free(t->dir);
	free(t->made);
	free(t->own_dir);
	free(t->stale);
	free(t);
}

void outfile_mkdir(struct outfile_set *t, const char *dir)
{
	t->dir = xreallocarray(t->dir, (size_t)t->n_dir + 1, sizeof *t->dir);
	t->dir[t->n_dir++] = xstrdup(dir);
}

/* The directory part of path ("." if none, "/" for "/x"); malloc'd. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *d;

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	d = xmalloc((size_t)(slash - path) + 1);
	memcpy(d, path, (size_t)(slash - path));
	d[slash - path] = '\0';
	return d;
}

/* Fills the kind, target and identity of a new entry for path. */
static void classify(struct entry *f, const char *path)
{
	struct stat st, out;
	bool out_ok = fstat(STDOUT_FILENO, &out) == 0;

	if (strcmp(path, "-") == 0) {
		f->kind = K_STDOUT;
		if (out_ok) {
			f->have_id = true;
			f->dev = out.st_dev;
			f->ino = out.st_ino;
		}
		return;
	}
	if (stat(path, &st) == 0) {
		f->have_id = true;
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		if (out_ok && out.st_dev == st.st_dev && out.st_ino == st.st_ino) {
			/* /dev/stdout, /proc/self/fd/1, or the file stdout is
			 * redirected to: write where stdout writes, never
			 * replacing (or truncating) the file under it */
			f->kind = K_STDOUT;
		} else if (S_ISREG(st.st_mode)) {
			/* A symbolic link to a regular file is written
			 * through, as the shell's '>' does: the file it
			 * points to is replaced and the link is kept. */
			char *real = realpath(path, NULL);

			f->kind = K_REPLACE;
			f->target = real ? xstrdup(real) : xstrdup(path);
			f->keep_mode = true;
			f->old_mode = st.st_mode & 07777;
			free(real);
		} else if (S_ISDIR(st.st_mode)) {
			f->kind = K_BAD;
			f->why = strerror(EISDIR);
		} else {
			f->kind = K_INPLACE;
		}
		return;
	}
	if (errno != ENOENT) {
		f->kind = K_BAD;
		f->why = strerror(errno);
		return;
	}
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		/* a link to nothing: refused rather than replaced by a file */
		f->kind = K_BAD;
		f->why = "a symbolic link to a missing file";
		return;
	}
	f->kind = K_REPLACE;
	f->target = xstrdup(path);
	{
		char *d = dir_of(path), *real = realpath(d, NULL);
		const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

		if (real) {
			size_t n = strlen(real) + strlen(name) + 2;

			f->key = xmalloc(n);
			snprintf(f->key, n, "%s/%s", real, name);
		} else {
			f->key = xstrdup(path);
		}
		free(real);
		free(d);
	}
}

/* True if a and b are the same file. */
static bool same(const struct entry *a, const struct entry *b)
{
	if (strcmp(a->path, b->path) == 0)
		return true;
	if (a->have_id && b->have_id)
		return a->dev == b->dev && a->ino == b->ino;
	return a->key && b->key && strcmp(a->key, b->key) == 0;
}

static void entry_free(struct entry *f)
{
	free(f->path);
	free(f->target);
	free(f->text);
	free(f->key);
}

bool outfile_is_stdout(const char *path)
{
	struct entry x = { .path = xstrdup(path) };
	bool r;

	classify(&x, path);
	r = x.kind == K_STDOUT;
	entry_free(&x);
	return r;
}

bool outfile_same(const char *a, const char *b)
{
	struct entry x = { .path = xstrdup(a) }, y = { .path = xstrdup(b) };
	bool r;

	classify(&x, a);
	classify(&y, b);
	r = same(&x, &y);
	entry_free(&x);
	entry_free(&y);
	return r;
}

int outfile_check_pair(const char *a, const char *b, struct err *e)
{
	struct entry x = { .path = xstrdup(a) }, y = { .path = xstrdup(b) };
	int rc = 0;

	classify(&x, a);
	classify(&y, b);
	if (x.kind == K_STDOUT && y.kind == K_STDOUT)
		rc = err_set(e, "'%s' and '%s' both write to stdout: name a file for one of them", a, b);
	else if (same(&x, &y) && x.kind != K_INPLACE && x.kind != K_STDOUT)
		rc = err_set(e, "'%s' and '%s' are the same file: each output needs its own", a, b);
	entry_free(&x);
	entry_free(&y);
	return rc;
}

/* Adds f (path, content and mode set) to t after classifying it; -1 with
 * e set and f freed when its file is in t already. */
static int add_entry(struct outfile_set *t, struct entry f, struct err *e)
{
	classify(&f, f.path);
	f.written = -1;
	for (int i = 0; i < t->n; i++) {
		/* stdout, a device or a FIFO may take two outputs in turn;
		 * a regular file would keep only the last */
		if (same(&t->f[i], &f) && f.kind != K_STDOUT && f.kind != K_INPLACE) {
			err_set(e, "'%s' and '%s' are the same file: each output needs its own",
				t->f[i].path, f.path);
			entry_free(&f);
			if (f.free_arg)
				f.free_arg(f.arg);
			t->conflict = true;
			return -1;
		}
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->f = xreallocarray(t->f, (size_t)t->cap, sizeof *t->f);
	}
	t->f[t->n++] = f;
	return 0;
}

int outfile_add(struct outfile_set *t, const char *path, const char *text, size_t len,
		unsigned mode, struct err *e)
{
	struct entry f = { .path = xstrdup(path), .len = len, .mode = mode };

	f.text = xmalloc(len + 1);
	memcpy(f.text, text, len);
	f.text[len] = '\0';
	return add_entry(t, f, e);
}

int outfile_add_writer(struct outfile_set *t, const char *path, outfile_writer write, void *arg,
		       void (*free_arg)(void *), unsigned mode, struct err *e)
{
	struct entry f = { .path = xstrdup(path), .write = write, .arg = arg, .free_arg = free_arg, .mode = mode };

	return add_entry(t, f, e);
}

long long outfile_written(const struct outfile_set *t, const char *path)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->f[i].path, path) == 0)
			return t->f[i].kind == K_REPLACE ? t->f[i].written : -1;
	return -1;
}

void outfile_manifest(struct outfile_set *t, const char *dir, bool force)
{
	free(t->own_dir);
	t->own_dir = xstrdup(dir);
	t->n_owned = t->n;
	t->force = force;
}

bool outfile_conflict(const struct outfile_set *t)
{
	return t->conflict;
}

/* mkdir -p dir, recording in t->made the directories it created (room for
 * them was made before the commit started). */
static int make_dir(struct outfile_set *t, const char *dir, struct err *e)
{
	char *p = xstrdup(dir);
	struct stat st;

	if (!*dir) {
		free(p);
		return err_set(e, "the output directory name is empty");
	}
	for (char *q = p + 1;; q++) {
		char c = *q;
		int rc;

		if (c != '/' && c != '\0')
			continue;
		*q = '\0';
		hold_signals(true);
		if ((rc = mkdir(p, 0777)) == 0) {
			t->made[t->n_made] = xstrdup(p);
			t->n_made = t->n_made + 1;
		}
		hold_signals(false);
		if (rc != 0 && errno != EEXIST) {
			err_set(e, "cannot create '%s': %s", p, strerror(errno));
			free(p);
			return -1;
		}
		*q = c;
		if (c == '\0')
			break;
	}
	free(p);
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return err_set(e, "cannot create '%s': %s", dir,
			       stat(dir, &st) != 0 ? strerror(errno) : "Not a directory");
	return 0;
}

/* Writes len bytes of s to fd; returns 0 or -1 with errno set. */
static int write_all(int fd, const char *s, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t w = write(fd, s + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/* Writes f's content to out (a stream on the file, stdout) and flushes it;
 * 0, or -1 with e naming f's path. */
static int write_content(FILE *out, struct entry *f, struct err *e)
{
	long long start = ftello(out);

	if (f->write) {
		if (f->write(out, f->arg, e) != 0)
			return -1;
	} else {
		fwrite(f->text, 1, f->len, out);
	}
	errno = 0;
	if (fflush(out) != 0 || ferror(out)) {
		int err = errno ? errno : EIO;

		clearerr(out);
		if (strcmp(f->path, "-") == 0)
			return err_set(e, "cannot write to stdout: %s", strerror(err));
		return err_set(e, "cannot write '%s': %s", f->path, strerror(err));
	}
	f->written = start >= 0 && ftello(out) >= start ? ftello(out) - start
		     : f->write				? -1
							: (long long)f->len;
	return 0;
}

/* Writes f's content to fd through a stream, fsyncs it when sync (a
 * temporary about to be renamed) and closes fd; 0, or -1 with e naming f's
 * path. */
static int write_close(int fd, struct entry *f, bool sync, struct err *e)
{
	FILE *out;
	int rc;

	if (!f->write) { /* a text: no stream needed */
		if (write_all(fd, f->text, f->len) || (sync && fsync(fd) != 0)) {
			err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
			close(fd);
			return -1;
		}
		f->written = (long long)f->len;
		if (close(fd) != 0)
			return err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
		return 0;
	}
	if (!(out = fdopen(fd, "w"))) {
		err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
		close(fd);
		return -1;
	}
	rc = write_content(out, f, e);
	if (rc == 0 && sync && fsync(fileno(out)) != 0)
		rc = err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
	if (fclose(out) != 0 && rc == 0)
		rc = err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
	return rc;
}

/* Writes f to a new temporary ".NAME.XXXXXX" beside its target, with the
 * mode of the file it replaces, else its own less the umask um. */
static int write_temp(struct entry *f, mode_t um, struct err *e)
{
	char *d = dir_of(f->target);
	const char *name = strrchr(f->target, '/') ? strrchr(f->target, '/') + 1 : f->target;
	size_t n = strlen(d) + strlen(name) + 16;
	int fd;

	f->tmp = xmalloc(n);
	snprintf(f->tmp, n, "%s/.%s.XXXXXX", d, name);
	free(d);
	hold_signals(true);
	fd = mkstemp(f->tmp);
	f->live = fd >= 0;
	hold_signals(false);
	if (fd < 0) {
		err_set(e, "cannot create '%s': %s", f->path, strerror(errno));
		free(f->tmp);
		f->tmp = NULL;
		return -1;
	}
	if (fchmod(fd, f->keep_mode ? f->old_mode : (mode_t)f->mode & ~um) != 0) {
		err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
		close(fd);
		return -1;
	}
	return write_close(fd, f, true, e);
}

/* Writes f where it is: stdout, or the device, FIFO or pipe at its path
 * (opened without O_TRUNC or O_CREAT: never replaced, never created). */
static int write_in_place(struct entry *f, struct err *e)
{
	int fd;

	if (f->kind == K_STDOUT)
		return write_content(stdout, f, e);
	fd = open(f->path, O_WRONLY | O_NOCTTY);
	if (fd < 0)
		return err_set(e, "cannot open '%s': %s", f->path, strerror(errno));
	return write_close(fd, f, false, e);
}

/* ---- the manifest of a launch directory (outfile_manifest) ---- */

/* FNV-1a 64 of n bytes at s, continuing from h (start: FNV_BASIS). */
#define FNV_BASIS 14695981039346656037ull
static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

/* The FNV-1a 64 of the file at path into *h; -1 when it cannot be read. */
static int hash_file(const char *path, uint64_t *h)
{
	char buf[65536];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return -1;
	*h = FNV_BASIS;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		*h = fnv1a(*h, buf, n);
	n = (size_t)ferror(f);
	fclose(f);
	return n ? -1 : 0;
}

/* The name of entry f inside t->own_dir ("launch.sh"), or NULL if f is not
 * one of the directory's launch files. */
static const char *owned_name(const struct outfile_set *t, int i)
{
	size_t n = strlen(t->own_dir);
	const char *p = t->f[i].path;

	if (i >= t->n_owned || strncmp(p, t->own_dir, n) != 0 || p[n] != '/' ||
	    strchr(p + n + 1, '/') || t->f[i].kind != K_REPLACE || !t->f[i].text)
		return NULL;
	return p + n + 1;
}

/* The old manifest's lines "HASH NAME" (16 hex digits, a space, a name
 * without '/'): *names and *hashes receive n entries (malloc'd; caller
 * frees each name and both arrays). A missing or unreadable manifest has
 * none; lines that are not of that form are skipped. */
static int read_manifest(const char *path, char ***names, uint64_t **hashes)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int n = 0;

	*names = NULL;
	*hashes = NULL;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		char *end, *name;
		uint64_t h;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || strlen(line) < 18 || line[16] != ' ')
			continue;
		errno = 0;
		h = strtoull(line, &end, 16);
		name = line + 17;
		if (errno || end != line + 16 || !*name || strchr(name, '/') ||
		    !strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		*names = xreallocarray(*names, (size_t)n + 1, sizeof **names);
		*hashes = xreallocarray(*hashes, (size_t)n + 1, sizeof **hashes);
		(*names)[n] = xstrdup(name);
		(*hashes)[n++] = h;
	}
	fclose(f);
	return n;
}

/* dir/name, malloc'd. */
static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = xmalloc(n);

	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Whether the regular file at path is what the manifest says ampplan wrote
 * (name listed with the file's hash). A missing file counts as ours. */
static bool is_ours(const char *path, const char *name, char **names, const uint64_t *hashes,
		    int n)
{
	struct stat st;
	uint64_t h;

	if (lstat(path, &st) != 0 && errno == ENOENT)
		return true;
	if (hash_file(path, &h) != 0)
		return false;
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return hashes[i] == h;
	return false;
}

/* Checks the launch directory against its old manifest (outfile_manifest),
 * notes its stale files in t->stale, and adds the new manifest to t.
 * Returns 0, or -1 with e set when a file it would replace or remove is not
 * ampplan's (without force). */
static int check_manifest(struct outfile_set *t, struct err *e)
{
	char *mpath = join(t->own_dir, OUTFILE_MANIFEST), **names;
	uint64_t *hashes;
	int n = read_manifest(mpath, &names, &hashes), rc = -1, owned = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *m = NULL;

	for (int i = 0; i < t->n; i++) {
		const char *name = owned_name(t, i);

		if (name && !t->force && !is_ours(t->f[i].path, name, names, hashes, n)) {
			err_set(e, "'%s' exists and was not written by ampplan (or was changed since; see %s there): move it away, or use --force to replace it",
				t->f[i].path, OUTFILE_MANIFEST);
			goto done;
		}
	}
	for (int k = 0; k < n; k++) {
		bool kept = false;
		char *path;

		for (int i = 0; i < t->n && !kept; i++)
			kept = owned_name(t, i) && strcmp(owned_name(t, i), names[k]) == 0;
		if (kept)
			continue;
		path = join(t->own_dir, names[k]);
		if (!t->force && !is_ours(path, names[k], names, hashes, n)) {
			err_set(e, "'%s', written by an earlier run, was changed since (see %s there): move it away, or use --force to remove it",
				path, OUTFILE_MANIFEST);
			free(path);
			goto done;
		}
		t->stale = xreallocarray(t->stale, (size_t)t->n_stale + 1, sizeof *t->stale);
		t->stale[t->n_stale++] = path;
	}
	m = must_alloc(open_memstream(&text, &len));
	fputs("# " OUTFILE_MANIFEST ": the files ampplan wrote in this directory, with the FNV-1a 64 hash of each;\n"
	      "# the next --out here replaces or removes only these (unless they were changed, or --force)\n",
	      m);
	for (int i = 0; i < t->n; i++)
		if (owned_name(t, i)) {
			fprintf(m, "%016llx %s\n",
				(unsigned long long)fnv1a(FNV_BASIS, t->f[i].text, t->f[i].len),
				owned_name(t, i));
			owned++;
		}
	if (fclose(m) != 0)
		fatal_oom();
	rc = owned ? outfile_add(t, mpath, text, len, 0666, e) : 0;
done:
	for (int k = 0; k < n; k++)
		free(names[k]);
	free(names);
	free(hashes);
	free(text);
	free(mpath);
	return rc;
}

int outfile_commit(struct outfile_set *t, struct err *e)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old, act = { .sa_handler = on_signal },
			 old_act[N_CLEANUP];
	mode_t um = umask(0);
	size_t room = 0;
	int i, rc = -1;

	umask(um);
	for (i = 0; i < t->n; i++)
		if (t->f[i].kind == K_BAD)
			return err_set(e, "cannot write '%s': %s", t->f[i].path, t->f[i].why);
	if (t->own_dir && check_manifest(t, e))
		return -1;
	for (i = 0; i < t->n_dir; i++)
		room += strlen(t->dir[i]) + 1; /* at most one directory per byte */
	t->made = xreallocarray(t->made, room + 1, sizeof *t->made);
	/* a reader that goes away makes write fail with EPIPE instead of
	 * killing the process with the temporaries left behind */
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old);
	sigemptyset(&act.sa_mask); /* one handler at a time */
	for (size_t k = 0; k < N_CLEANUP; k++)
		sigaddset(&act.sa_mask, cleanup_signal[k]);
	act.sa_flags = SA_RESETHAND;
	committing = t;
	for (size_t k = 0; k < N_CLEANUP; k++)
		sigaction(cleanup_signal[k], &act, &old_act[k]);
	for (i = 0; i < t->n_dir; i++)
		if (make_dir(t, t->dir[i], e))
			goto done;
	for (i = 0; i < t->n; i++)
		if (t->f[i].kind == K_REPLACE && write_temp(&t->f[i], um, e))
			goto done;
	for (i = 0; i < t->n; i++)
		if (t->f[i].kind != K_REPLACE && write_in_place(&t->f[i], e))
			goto done;
	for (i = 0; i < t->n; i++) {
		struct entry *f = &t->f[i];
		int r;

		if (f->kind != K_REPLACE)
			continue;
		hold_signals(true);
		if ((r = rename(f->tmp, f->target)) == 0)
			f->live = 0;
		hold_signals(false);
		if (r != 0) {
			/* rare (the temporary is in the same directory);
			 * files renamed before this one stay replaced */
			err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
			goto done;
		}
		free(f->tmp);
		f->tmp = NULL;
	}
	hold_signals(true);
	for (i = 0; i < t->n_made; i++)
		free(t->made[i]);
	t->n_made = 0;
	hold_signals(false);
	for (i = 0; i < t->n_stale; i++)
		unlink(t->stale[i]); /* committed: a failure changes nothing written */
	rc = 0;
done:
	if (rc)
		roll_back(t);
	committing = NULL;
	for (size_t k = 0; k < N_CLEANUP; k++)
		sigaction(cleanup_signal[k], &old_act[k], NULL);
	sigaction(SIGPIPE, &old, NULL);
	return rc;
}
