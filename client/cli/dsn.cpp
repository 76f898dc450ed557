// dsn.cpp -- the DSN's sources and its masking in messages (dsn.hpp).
#include "dsn.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "pglease/error.hpp"

namespace pglease::cli {

namespace {

constexpr std::string_view mask = "****";

// first_line -- the first line of the file at path, without its line end
// and trailing blanks; nullopt with the reason when it cannot be read
std::optional<std::string>
first_line(const std::string &path, std::string &error)
{
	errno = 0;
	std::ifstream in{path};
	if (!in) {
		error = "--dsn-file '" + path + "' cannot be read: " +
		        (errno != 0 ? std::strerror(errno) : "cannot open it");
		return std::nullopt;
	}
	std::string line;
	std::getline(in, line);
	if (in.bad()) {
		error = "--dsn-file '" + path + "' cannot be read (is it a directory?)";
		return std::nullopt;
	}
	while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
		line.pop_back();
	if (line.empty()) {
		error = "--dsn-file '" + path + "': its first line is empty (it must hold the DSN)";
		return std::nullopt;
	}
	return line;
}

// replace_all -- every occurrence of secret in text masked
void
replace_all(std::string &text, std::string_view secret)
{
	if (secret.empty())
		return;
	for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + mask.size()))
		text.replace(at, secret.size(), mask);
}

} // namespace

std::optional<std::string>
resolve_dsn(const DsnSources &sources, std::string &error)
{
	if (sources.dsn)
		return *sources.dsn;
	if (sources.file)
		return first_line(*sources.file, error);
	const char *variable = std::getenv(std::string{dsn_variable}.c_str());
	return std::string{variable ? variable : ""};
}

std::string
shown(std::string_view message, std::string_view dsn)
{
	std::string out = pglease::redact(message, dsn);
	const auto at = dsn.rfind('@');
	if (at == std::string_view::npos || pglease::redact(dsn, dsn) != dsn)
		return out; // no '@', or redact knew where the password is
	// a DSN no parser took apart: its credential-like part, after the
	// scheme's separator if it has one
	auto start = dsn.find("://");
	start = start == std::string_view::npos || start > at ? 0 : start + 3;
	while (start < at && dsn[start] == '/')
		start++;
	const auto colon = dsn.find(':', start);
	if (colon != std::string_view::npos && colon < at) {
		// "postgresql:/user:pw@host": the part after the user, or after the
		// scheme when its "//" is missing
		const auto second = dsn.find(':', colon + 1);
		replace_all(out, dsn.substr(colon + 1, at - colon - 1));
		if (second != std::string_view::npos && second < at)
			replace_all(out, dsn.substr(second + 1, at - second - 1));
	}
	return out;
}

} // namespace pglease::cli
