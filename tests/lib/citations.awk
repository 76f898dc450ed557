# citations.awk -- the scanner of tests/lib/citations.sh (which says what a
# citation is and how it resolves): reads the files named as arguments and
# prints each citation that does not resolve, as
# FILE:LINE <tab> TOKEN <tab> WHY <tab> ROOTED, then "checked <tab> N".
# -v list=FILE: the repository's files, one path a line, relative to the
# current directory (the repository's top).  POSIX awk (mawk runs it).

BEGIN {
	ext = "(md|c|h|cpp|hpp|sh|sql|spec|cmake|txt)(\\.in)?"
	file_re = "[A-Za-z0-9_./-]*[A-Za-z0-9_-]\\." ext
	url_re = "[A-Za-z][A-Za-z0-9+.-]*://[^ \t)>\"'`]*"
	checked = 0
	while ((getline path < list) > 0) {
		files[path] = 1
		add_suffixes(path)
		for (d = dirname(path); d != "."; d = dirname(d)) {
			dirs[d] = 1
			add_suffixes(d)
		}
		if (path ~ /\.md$/)
			read_headings(path)
	}
	close(list)
	# a path from the top: a top folder of the repository, then a file name
	# with any extension, or a folder written with its trailing slash
	top = ""
	for (d in dirs)
		if (d !~ /\// && d !~ /^\./)
			top = top (top == "" ? "" : "|") d
	rooted_re = "(" top ")/[A-Za-z0-9_./-]*(/|\\.[A-Za-z0-9]+)"
}

# ---- paths --------------------------------------------------------------------

function dirname(p,    i) {
	for (i = length(p); i > 0; i--)
		if (substr(p, i, 1) == "/")
			return i == 1 ? "/" : substr(p, 1, i - 1)
	return "."
}

# add_suffixes -- every tail of p after a '/', and p itself: what a citation
# like "etcd/gateway.hpp" may name
function add_suffixes(p,    i) {
	tail[p] = 1
	for (i = 1; i <= length(p); i++)
		if (substr(p, i, 1) == "/")
			tail[substr(p, i + 1)] = 1
}

# normalize -- p without "." and ".." components; "" when it climbs out of
# the top
function normalize(p,    n, parts, i, out, depth, stack) {
	n = split(p, parts, "/")
	depth = 0
	for (i = 1; i <= n; i++) {
		if (parts[i] == "" || parts[i] == ".")
			continue
		if (parts[i] == "..") {
			if (depth == 0)
				return ""
			depth--
			continue
		}
		stack[++depth] = parts[i]
	}
	out = "."
	for (i = 1; i <= depth; i++)
		out = i == 1 ? stack[i] : out "/" stack[i]
	return out
}

function exists(p) {
	sub(/\/$/, "", p)
	return (p in files) || (p in dirs) || p == "."
}

# ---- headings: the anchors of every .md file ------------------------------------

# slug -- GitHub's anchor for a heading: lower case, only letters, digits,
# '_', '-' and spaces kept (non-ASCII bytes dropped: keep headings ASCII),
# spaces as '-'
function slug(text) {
	text = tolower(text)
	gsub(/[^a-z0-9 _-]/, "", text)
	gsub(/ /, "-", text)
	return text
}

function read_headings(path,    line, fenced, s, n) {
	fenced = 0
	while ((getline line < path) > 0) {
		if (line ~ /^ ? ? ?(```|~~~)/) {
			fenced = !fenced
			continue
		}
		if (fenced || line !~ /^#+ /)
			continue
		sub(/^#+ +/, "", line)
		sub(/ +#* *$/, "", line)
		s = slug(line)
		n = used[path, s]++
		anchors[path "#" (n ? s "-" n : s)] = 1
	}
	close(path)
}

# ---- what is reported -----------------------------------------------------------

function broken(token, why, rooted) {
	printf "%s:%d\t%s\t%s\t%d\n", FILENAME, FNR, token, why, rooted
}

# check_anchor -- FILE#SECTION: SECTION must be a heading of FILE
function check_anchor(target, section, shown) {
	if (target ~ /\.md$/ && !((target "#" section) in anchors))
		broken(shown, "no heading of " target " has the anchor #" section, 0)
}

# check_name -- a file or directory name as prose and code cite it
function check_name(token, after,    p, section) {
	checked++
	if (token ~ /^\//) {
		if (token ~ /^\/(usr|etc|proc|sys|dev|tmp|var|opt|lib|bin)\//)
			return
		# "/scripts/redis.sh" joined to the source directory at run time
		if (!exists(normalize(token)) && !(substr(token, 2) in tail))
			broken(token, "an absolute path outside the system's folders: the repository must stand alone", 0)
		return
	}
	p = normalize(dirname(FILENAME) "/" token)
	if (token ~ /(^|\/)\.\.\// && p == "") {
		broken(token, "a path outside the repository", 0)
		return
	}
	if (!exists(p)) {
		p = normalize(token)
		if (p == "" || !(exists(p) || (p in tail) || ((p ".in") in tail))) {
			broken(token, "no such file in the repository", 1)
			return
		}
	}
	if (match(after, /^#[A-Za-z0-9_-]+/)) {
		section = substr(after, 2, RLENGTH - 1)
		if (!exists(p) || !(p in files)) # a tail: find the one file it names
			for (f in files)
				if (f ~ /\.md$/ && substr(f, length(f) - length(p)) == "/" p)
					p = f
		check_anchor(p, section, token "#" section)
	}
}

# check_section -- README "Section" or <name>.md "Section": a heading of
# that file (the top README.md for README)
function check_section(quoted,    name, title, i, p, f) {
	i = index(quoted, "\"")
	title = substr(quoted, i + 1, length(quoted) - i - 1)
	name = substr(quoted, 1, i - 2)
	sub(/(,|'s)$/, "", name)
	if (title ~ /[$%[({]/) # a shell argument or a format, not a heading
		return
	checked++
	p = name == "README" ? "README.md" : normalize(dirname(FILENAME) "/" name)
	if (!(p in files))
		p = normalize(name)
	if (!(p in files)) {
		p = ""
		for (f in files)
			if (f == name || substr(f, length(f) - length(name)) == "/" name)
				p = f
	}
	if (p == "") {
		broken(name, "no such file in the repository", 1)
		return
	}
	if (!((p "#" slug(title)) in anchors))
		broken(quoted, "no heading of " p " reads \"" title "\"", 0)
}

# check_link -- a markdown link target, relative to its own file
function check_link(target,    file, section, i, p) {
	if (target ~ /^[A-Za-z][A-Za-z0-9+.-]*:/ || target ~ /^</)
		return
	checked++
	i = index(target, "#")
	file = i ? substr(target, 1, i - 1) : target
	section = i ? substr(target, i + 1) : ""
	p = file == "" ? FILENAME : normalize(dirname(FILENAME) "/" file)
	if (p == "") {
		broken(target, "a link outside the repository", 0)
		return
	}
	if (!exists(p)) {
		broken(target, "a link to " p ", which is not in the repository", 0)
		return
	}
	if (section != "")
		check_anchor(p, section, target)
}

# ---- the scan -------------------------------------------------------------------

FNR == 1 { fenced = 0 }

FILENAME ~ /\.md$/ && /^ ? ? ?(```|~~~)/ { fenced = !fenced }

/^[ \t]*#[ \t]*include[ \t]/ { next }

{
	line = $0
	gsub(url_re, " ", line)
	if (FILENAME ~ /\.md$/ && !fenced) {
		rest = line
		while (match(rest, /\]\([^) \t]+\)/)) {
			check_link(substr(rest, RSTART + 2, RLENGTH - 3))
			rest = substr(rest, RSTART + RLENGTH)
		}
	}
	rest = line
	prev = ""
	while (match(rest, file_re)) {
		before = RSTART > 1 ? substr(rest, RSTART - 1, 1) : prev
		token = substr(rest, RSTART, RLENGTH)
		after = substr(rest, RSTART + RLENGTH)
		prev = substr(token, length(token), 1)
		rest = after
		# a longer word (lease.counter), or a computed path ($ROOT/x, $(...)/x,
		# %s/x, <NAME>/x)
		if (after ~ /^[A-Za-z0-9_]/ || before ~ /[$%})>A-Za-z0-9_]/)
			continue
		check_name(token, after)
	}
	rest = line
	while (match(rest, /(README|[A-Za-z0-9_.\/-]+\.md)(,|'s)? "[^"]+"/)) {
		quoted = substr(rest, RSTART, RLENGTH)
		rest = substr(rest, RSTART + RLENGTH)
		check_section(quoted)
	}
	rest = line
	while (match(rest, rooted_re)) {
		before = RSTART > 1 ? substr(rest, RSTART - 1, 1) : ""
		token = substr(rest, RSTART, RLENGTH)
		rest = substr(rest, RSTART + RLENGTH)
		if (before ~ /[$})>A-Za-z0-9_.\/-]/)
			continue
		check_name(token, "")
	}
}

END { printf "checked\t%d\n", checked }
