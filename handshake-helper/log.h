/* SPDX-License-Identifier: GPL-2.0 */
/* Logging: syslog(3), plus stderr in foreground and debug modes. */
#ifndef TLSH_LOG_H
#define TLSH_LOG_H

enum tlsh_log_level {
	TLSH_LOG_ERROR = 0,
	TLSH_LOG_WARNING,
	TLSH_LOG_INFO,
	TLSH_LOG_DEBUG,
};

void tlsh_log_init(const char *ident, int to_syslog, int to_stderr);
void tlsh_log_set_level(enum tlsh_log_level level);
enum tlsh_log_level tlsh_log_get_level(void);
/* Name <-> level ("error", "warning", "info", "debug"); the level, or
 * -EINVAL for an unknown name. */
int tlsh_log_level_from_name(const char *name);
const char *tlsh_log_level_name(enum tlsh_log_level level);

/* What tlsh_log_msg() does to a line before it is written: every byte
 * of a control character (C0, DEL, C1, also UTF-8-encoded), of a bidi
 * control (U+061C, U+200E/F, U+202A-E, U+2066-9) or of bytes that are
 * not well-formed UTF-8 becomes '?'; the rest is kept as it is. */
void tlsh_log_sanitize(char *s);

void tlsh_log_msg(enum tlsh_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...)	tlsh_log_msg(TLSH_LOG_ERROR, __VA_ARGS__)
#define log_warn(...)	tlsh_log_msg(TLSH_LOG_WARNING, __VA_ARGS__)
#define log_info(...)	tlsh_log_msg(TLSH_LOG_INFO, __VA_ARGS__)
#define log_debug(...)	tlsh_log_msg(TLSH_LOG_DEBUG, __VA_ARGS__)

#endif
