// error.cpp -- Errc names and the SQLSTATE mapping (docs/sql.md "SQLSTATEs").
#include "pglease/error.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace pglease {

std::string_view
to_string(Errc code) noexcept
{
	switch (code) {
	case Errc::timeout:
		return "timeout";
	case Errc::lost:
		return "lost";
	case Errc::nested:
		return "nested";
	case Errc::unavailable:
		return "unavailable";
	case Errc::invalid_argument:
		return "invalid_argument";
	case Errc::permission:
		return "permission";
	case Errc::not_installed:
		return "not_installed";
	case Errc::internal:
		return "internal";
	}
	return "internal";
}

std::ostream &
operator<<(std::ostream &os, Errc code)
{
	return os << to_string(code);
}

std::ostream &
operator<<(std::ostream &os, const Error &error)
{
	os << error.code;
	if (!error.sqlstate.empty())
		os << " (" << error.sqlstate << ")";
	if (!error.message.empty())
		os << ": " << error.message;
	return os;
}

namespace {

constexpr std::string_view mask = "****";

// Where a password sits in TEXT: [begin, end) ranges, in order.
struct Span {
	std::size_t begin, end;
};

// url_passwords -- scheme://user:PASSWORD@...: the userinfo ends at '@'; a
// '/', '?', '#', quote or space first means there is none
void
url_passwords(std::string_view text, std::vector<Span> &out)
{
	for (std::size_t at = text.find("://"); at != std::string_view::npos; at = text.find("://", at + 3)) {
		std::size_t start = at + 3, colon = std::string_view::npos, i = start;
		for (; i < text.size(); i++) {
			char c = text[i];
			if (c == ':' && colon == std::string_view::npos)
				colon = i;
			if (c == '@' || c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' ||
			    std::isspace(static_cast<unsigned char>(c)))
				break;
		}
		// the last '@' of the authority ends the userinfo (a password may hold '@')
		std::size_t end = i;
		if (end < text.size() && text[end] == '@') {
			for (std::size_t j = end + 1; j < text.size(); j++) {
				char c = text[j];
				if (c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' ||
				    std::isspace(static_cast<unsigned char>(c)))
					break;
				if (c == '@')
					end = j;
			}
			if (colon != std::string_view::npos && colon < end)
				out.push_back({colon + 1, end});
		}
	}
}

// keyword_passwords -- password=VALUE (key=value strings: quoted with '' and
// backslash escapes, or up to a space; URL queries: up to '&')
void
keyword_passwords(std::string_view text, std::vector<Span> &out)
{
	auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
	const std::string_view key = "password";
	for (std::size_t i = 0; i + key.size() <= text.size(); i++) {
		bool match = true;
		for (std::size_t k = 0; k < key.size() && match; k++)
			match = lower(text[i + k]) == key[k];
		if (!match)
			continue;
		std::size_t j = i + key.size();
		while (j < text.size() && text[j] == ' ')
			j++;
		if (j >= text.size() || text[j] != '=')
			continue;
		j++;
		while (j < text.size() && text[j] == ' ')
			j++;
		std::size_t begin = j;
		if (j < text.size() && text[j] == '\'') {
			for (j++; j < text.size() && text[j] != '\''; j++)
				if (text[j] == '\\')
					j++;
			j = std::min(j + 1, text.size());
		} else {
			while (j < text.size() && text[j] != '&' && text[j] != '"' &&
			       !std::isspace(static_cast<unsigned char>(text[j])))
				j++;
		}
		if (j > begin)
			out.push_back({begin, j});
		i = j;
	}
}

std::vector<Span>
password_spans(std::string_view text)
{
	std::vector<Span> spans;
	url_passwords(text, spans);
	keyword_passwords(text, spans);
	return spans;
}

// percent_decoded -- a URL's %XX escapes decoded (libpq and the providers
// quote the decoded password)
std::string
percent_decoded(std::string_view s)
{
	std::string out;
	for (std::size_t i = 0; i < s.size(); i++) {
		if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
		    std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
			out += static_cast<char>(std::stoi(std::string{s.substr(i + 1, 2)}, nullptr, 16));
			i += 2;
		} else
			out += s[i];
	}
	return out;
}

void
replace_all(std::string &text, const std::string &secret)
{
	if (secret.empty() || secret == mask)
		return;
	for (std::size_t at = text.find(secret); at != std::string::npos;
	     at = text.find(secret, at + mask.size()))
		text.replace(at, secret.size(), mask);
}

} // namespace

std::string
redact(std::string_view text, std::string_view dsn)
{
	std::vector<std::string> secrets;
	for (const Span &s : password_spans(dsn)) {
		std::string_view raw = dsn.substr(s.begin, s.end - s.begin);
		if (raw.size() >= 2 && raw.front() == '\'' && raw.back() == '\'')
			raw = raw.substr(1, raw.size() - 2);
		secrets.emplace_back(raw);
		secrets.push_back(percent_decoded(raw));
	}
	std::string out;
	std::size_t from = 0;
	std::vector<Span> spans = password_spans(text);
	std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) { return a.begin < b.begin; });
	for (const Span &s : spans) {
		if (s.begin < from)
			continue;
		out.append(text.substr(from, s.begin - from));
		out.append(mask);
		from = s.end;
	}
	out.append(text.substr(from));
	// longest first, so a secret that contains another is masked whole
	std::sort(secrets.begin(), secrets.end(),
	          [](const std::string &a, const std::string &b) { return a.size() > b.size(); });
	for (const std::string &secret : secrets)
		replace_all(out, secret);
	return out;
}

Errc
errc_from_sqlstate(std::string_view s) noexcept
{
	if (s == "LS001")
		return Errc::lost;
	if (s == "LS002")
		return Errc::nested;
	if (s == "LS003") // a mode or limit that disagrees with the resource's grants
		return Errc::invalid_argument;
	// 22021/22P05: bytes the database's encoding cannot carry; 22008/22015:
	// an interval out of range; 3D000: no such database
	if (s == "22023" || s == "22004" || s == "22007" || s == "0A000" || s == "22021" || s == "22P05" ||
	    s == "22008" || s == "22015" || s == "3D000")
		return Errc::invalid_argument;
	// 28000/28P01: authentication refused (wrong password, no pg_hba.conf entry)
	if (s == "42501" || s == "28000" || s == "28P01")
		return Errc::permission;
	// schema, function or table of the extension missing; 55000: needs preload
	if (s == "3F000" || s == "42883" || s == "42P01" || s == "55000")
		return Errc::not_installed;
	// statement_timeout / cancel, lock_timeout
	if (s == "57014" || s == "55P03")
		return Errc::timeout;
	// connection exceptions, shutdown/termination, too many connections,
	// read-only standby (after failover the old primary may refuse writes)
	if (s.rfind("08", 0) == 0 || s.rfind("57P", 0) == 0 || s == "53300" || s == "25006")
		return Errc::unavailable;
	return Errc::internal;
}

bool
is_retryable(const Error &error) noexcept
{
	switch (error.code) {
	case Errc::timeout:
	case Errc::unavailable:
		return true;
	case Errc::internal:
		// serialization failure / deadlock: retry the transaction
		return error.sqlstate.rfind("40", 0) == 0;
	default:
		return false;
	}
}

} // namespace pglease
