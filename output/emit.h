/* emit.h: launch configs for a chosen strategy: Megatron-LM launch scripts,
 * torchtitan TOML, DeepSpeed JSON, NeMo / Megatron Bridge overrides, and a
 * Slurm job around the Megatron script. */
#ifndef AMPPLAN_EMIT_H
#define AMPPLAN_EMIT_H

struct err;
struct model;
struct cluster;
struct strategy;
struct outfile_set;

enum emit_format {
	EMIT_MEGATRON,	      /* launch.sh, nodes.txt */
	EMIT_TORCHTITAN,      /* train.toml, run.sh, nodes.txt */
	EMIT_DEEPSPEED,	      /* ds_config.json, launch.sh, nodes.txt */
	EMIT_NEMO,	      /* overrides.txt, nodes.txt */
	EMIT_SLURM,	      /* job.sbatch, launch.sh (Megatron), nodes.txt */
	EMIT_TORCHTITAN_MAIN, /* config.py, run.sh, nodes.txt (torchtitan
				 main, Python config) */
	EMIT_COUNT
};

/* "megatron", "torchtitan", "deepspeed", "nemo", "slurm", "torchtitan-main". */
const char *emit_format_name(enum emit_format f);
/* Returns the enum value, or -1 for an unknown name. */
int emit_format_parse(const char *name);

/* Writes the launch files of format (a name above) for strategy s of model m
 * on cluster c into dir, creating dir and its parents if missing. Runs
 * trainer_check first (slurm checks megatron) and writes nothing if it
 * fails. Every file is written to a temporary name in dir and renamed only
 * once all are complete, so none is ever half-written; existing files of the
 * same names are replaced. m->layer is not read.
 * Returns 0, or -1 with e set: "unknown format 'x'", the trainer_check rule,
 * or "cannot create 'dir/launch.sh': <strerror>". */
int emit_write(const char *format, const char *dir, const struct model *m,
	       const struct cluster *c, const struct strategy *s, struct err *e);

/* Like emit_write, but adds the files (dir/NAME) and dir to the transaction
 * t instead of writing them: nothing is written until outfile_commit(t).
 * row_line: the ranking's row of s as the table printed it
 * (report_row_line), which the header repeats after "# row:" on a line of
 * its own as "#" + row_line; NULL: none. Returns 0, or -1 with e set (also
 * when a file names the same path as one already in t: outfile_conflict(t)
 * is then true). */
int emit_stage(const char *format, const char *dir, const struct model *m,
	       const struct cluster *c, const struct strategy *s, const char *row_line,
	       struct outfile_set *t, struct err *e);

#endif
