/* outfile.c: output files written as one transaction (see outfile.h):
 * temporaries beside regular targets, renamed only once every file was
 * written; non-regular targets (stdout, devices, FIFOs, pipes) written in
 * place. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE	700 /* realpath */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
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
	char *path;   /* as given */
	char *target; /* K_REPLACE: the file to replace (links resolved) */
	char *tmp;    /* K_REPLACE: the temporary while it exists */
	char *text;
	size_t len;
	unsigned mode;
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
	char **made; /* directories commit created, in creation order */
	int n_made;
	bool conflict;
};

struct outfile_set *outfile_create(void)
{
	return xcalloc(1, sizeof(struct outfile_set));
}

/* Removes the temporaries and then the directories created, newest first. */
static void roll_back(struct outfile_set *t)
{
	for (int i = 0; i < t->n; i++) {
		if (t->f[i].tmp)
			unlink(t->f[i].tmp);
		free(t->f[i].tmp);
		t->f[i].tmp = NULL;
	}
	for (int i = t->n_made - 1; i >= 0; i--) {
		rmdir(t->made[i]);
		free(t->made[i]);
	}
	t->n_made = 0;
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
	}
	for (int i = 0; i < t->n_dir; i++)
		free(t->dir[i]);
	free(t->f);
	free(t->dir);
	free(t->made);
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

int outfile_add(struct outfile_set *t, const char *path, const char *text, size_t len,
		unsigned mode, struct err *e)
{
	struct entry f = { .path = xstrdup(path), .len = len, .mode = mode };

	classify(&f, path);
	for (int i = 0; i < t->n; i++) {
		/* stdout, a device or a FIFO may take two outputs in turn;
		 * a regular file would keep only the last */
		if (same(&t->f[i], &f) && f.kind != K_STDOUT && f.kind != K_INPLACE) {
			err_set(e, "'%s' and '%s' are the same file: each output needs its own",
				t->f[i].path, path);
			entry_free(&f);
			t->conflict = true;
			return -1;
		}
	}
	f.text = xmalloc(len + 1);
	memcpy(f.text, text, len);
	f.text[len] = '\0';
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->f = xreallocarray(t->f, (size_t)t->cap, sizeof *t->f);
	}
	t->f[t->n++] = f;
	return 0;
}

bool outfile_conflict(const struct outfile_set *t)
{
	return t->conflict;
}

/* mkdir -p dir, recording in t->made the directories it created. */
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

		if (c != '/' && c != '\0')
			continue;
		*q = '\0';
		if (mkdir(p, 0777) == 0) {
			t->made = xreallocarray(t->made, (size_t)t->n_made + 1, sizeof *t->made);
			t->made[t->n_made++] = xstrdup(p);
		} else if (errno != EEXIST) {
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

/* Writes f's text to fd, fsyncs it when sync (a temporary about to be
 * renamed) and closes fd; 0, or -1 with e naming f's path. */
static int write_close(int fd, const struct entry *f, bool sync, struct err *e)
{
	if (write_all(fd, f->text, f->len) || (sync && fsync(fd) != 0)) {
		err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
		close(fd);
		return -1;
	}
	if (close(fd) != 0)
		return err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
	return 0;
}

/* Writes f to a new temporary ".NAME.XXXXXX" beside its target. */
static int write_temp(struct entry *f, mode_t um, struct err *e)
{
	char *d = dir_of(f->target);
	const char *name = strrchr(f->target, '/') ? strrchr(f->target, '/') + 1 : f->target;
	size_t n = strlen(d) + strlen(name) + 16;
	int fd;

	f->tmp = xmalloc(n);
	snprintf(f->tmp, n, "%s/.%s.XXXXXX", d, name);
	free(d);
	fd = mkstemp(f->tmp);
	if (fd < 0) {
		err_set(e, "cannot create '%s': %s", f->path, strerror(errno));
		free(f->tmp);
		f->tmp = NULL;
		return -1;
	}
	if (fchmod(fd, (mode_t)f->mode & ~um) != 0) {
		err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
		close(fd);
		return -1;
	}
	return write_close(fd, f, true, e);
}

/* Writes f where it is: stdout, or the device, FIFO or pipe at its path
 * (opened without O_TRUNC or O_CREAT: never replaced, never created). */
static int write_in_place(const struct entry *f, struct err *e)
{
	int fd;

	if (f->kind == K_STDOUT) {
		if (fwrite(f->text, 1, f->len, stdout) != f->len || fflush(stdout) != 0)
			return err_set(e, "cannot write %s: %s",
				       strcmp(f->path, "-") ? f->path : "to stdout", strerror(errno));
		return 0;
	}
	fd = open(f->path, O_WRONLY | O_NOCTTY);
	if (fd < 0)
		return err_set(e, "cannot open '%s': %s", f->path, strerror(errno));
	return write_close(fd, f, false, e);
}

int outfile_commit(struct outfile_set *t, struct err *e)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	mode_t um = umask(0);
	int i, rc = -1;

	umask(um);
	for (i = 0; i < t->n; i++)
		if (t->f[i].kind == K_BAD)
			return err_set(e, "cannot write '%s': %s", t->f[i].path, t->f[i].why);
	/* a reader that goes away makes write fail with EPIPE instead of
	 * killing the process with the temporaries left behind */
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old);
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

		if (f->kind != K_REPLACE)
			continue;
		if (rename(f->tmp, f->target) != 0) {
			/* rare (the temporary is in the same directory);
			 * files renamed before this one stay replaced */
			err_set(e, "cannot write '%s': %s", f->path, strerror(errno));
			goto done;
		}
		free(f->tmp);
		f->tmp = NULL;
	}
	for (i = 0; i < t->n_made; i++)
		free(t->made[i]);
	t->n_made = 0;
	rc = 0;
done:
	if (rc)
		roll_back(t);
	sigaction(SIGPIPE, &old, NULL);
	return rc;
}
