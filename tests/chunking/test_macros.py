"""C-family source behind unexpanded macros (sai/chunking/macros.py), chunked over real parses:
the forms of nlohmann/json, fmt, redis and curl, cut down."""

from __future__ import annotations

import pytest

from sai.chunking.macros import blank_macros
from sai.chunking.treesitter import TreeSitterChunker
from sai.models import Chunk

# nlohmann/json: namespace macros on their own lines, a template macro before the class, an
# access label's macro, an attribute call before a constructor
NLOHMANN = """\
#include <string>

NLOHMANN_JSON_NAMESPACE_BEGIN
namespace detail
{

template<typename T>
struct char_traits : std::char_traits<T>
{};

template<>
struct char_traits<unsigned char> : std::char_traits<char>
{
    static int eof() noexcept { return -1; }
};

template<typename It>
struct iterator_types <
    It,
    void_t<typename It::difference_type, typename It::value_type >>
{
    using value_type = typename It::value_type;
};

class exception : public std::exception
{
  protected:
    JSON_HEDLEY_NON_NULL(3)
    exception(int id_, const char* what_arg) : id(id_), m(what_arg) {}
};

}  // namespace detail

NLOHMANN_BASIC_JSON_TPL_DECLARATION
class basic_json
    : public ::nlohmann::detail::json_base_class<CustomBaseClass>
{
  JSON_PRIVATE_UNLESS_TESTED:
    using lexer = ::nlohmann::detail::lexer_base<basic_json>;

  public:
    JSON_HEDLEY_WARN_UNUSED_RESULT
    static basic_json parse(const char* s) { return basic_json(s); }

    explicit operator bool() const noexcept { return true; }
};
NLOHMANN_JSON_NAMESPACE_END
"""

# fmt: a namespace macro, an export macro before a template and a struct, an API macro in a class head
FMT = """\
FMT_BEGIN_NAMESPACE
FMT_EXPORT template <typename T> struct formatter {
  void parse() {}
};
FMT_EXPORT struct format_args {
  int size() const { return 0; }
};
class FMT_API format_error : public std::runtime_error {
 public:
  const char* what() const noexcept { return ""; }
};
class EXPORT_AS("default") format_context {
  int arg() const { return 0; }
};
FMT_END_NAMESPACE
"""

# redis and curl: an attribute macro on the line before a function, a statement macro, values
# that are no macros of this kind (a NULL ending a list, an enumerator, a type before a name)
REDIS = """\
static const char *help[] = {
"GET <key>",
NULL
};

enum state {
  STATE_INIT,
  STATE_LAST
};

ATTRIBUTE_TARGET_POPCNT
long long redisPopcount(void *s, long count) {
    long long bits = 0;
    GET_NUMERIC_TYPE(prev)
    if (prev) {
        return bits;
    }
    return bits;
}

VALUE
rb_call(VALUE self)
{
    return self;
}
"""


def units(text: str, language: str) -> dict[str | None, Chunk]:
    """The first chunk of each symbol."""
    out: dict[str | None, Chunk] = {}
    for chunk in TreeSitterChunker().chunk("f", text, language):
        out.setdefault(chunk.symbol, chunk)
    return out


def test_types_inside_namespace_macros_are_named_by_their_namespace() -> None:
    found = units(NLOHMANN, "cpp")
    assert {"detail.char_traits", "detail.char_traits.eof", "detail.iterator_types",
            "detail.exception", "detail.exception.exception"} <= set(found)
    assert not [s for s in found if s and s.split(".")[0] in {"namespace", "public", "struct"}]


def test_a_class_after_a_template_macro_holds_its_members_and_the_macro_line() -> None:
    found = units(NLOHMANN, "cpp")
    assert found["basic_json"].kind == "class"
    assert found["basic_json"].text.startswith("NLOHMANN_BASIC_JSON_TPL_DECLARATION\nclass basic_json")
    assert found["basic_json.parse"].kind == "method"
    assert found["basic_json.parse"].text.lstrip().startswith("JSON_HEDLEY_WARN_UNUSED_RESULT")
    assert "basic_json.operator bool" in found  # a conversion's name, without `() const noexcept`


def test_a_specialisation_is_of_kind_specialization_and_named_as_its_template() -> None:
    chunks = [c for c in TreeSitterChunker().chunk("f", NLOHMANN, "cpp") if c.symbol == "detail.char_traits"]
    assert [(c.start_line, c.kind) for c in chunks] == [(7, "struct"), (11, "specialization")]
    assert units(NLOHMANN, "cpp")["detail.iterator_types"].kind == "specialization"  # a partial one


def test_export_and_api_macros_leave_fmt_types_their_names() -> None:
    found = units(FMT, "cpp")
    assert (found["formatter"].kind, found["format_args"].kind, found["format_error"].kind) == (
        "struct", "struct", "class")
    assert {"formatter.parse", "format_args.size", "format_error.what", "format_context.arg"} <= set(found)


CLI = """namespace CLI {
class App {
  public:
    CLI11_NODISCARD std::size_t count() const { return parsed_; }

    CLI11_NODISCARD std::size_t count(std::string option_name) const { return get_option(option_name)->count(); }

    FMT_CONSTEXPR20 FMT_INLINE const App *parent(int depth) const {
        return depth ? parent_ : this;
    }
    CLI11_INLINE std::vector<std::string> remaining(bool recurse = false) const;
    FMT_CONSTEXPR basic_string_view(const char *s) : data_(s) {}
    std::size_t plain_count() const { return parsed_; }
};
}
"""


def test_a_macro_before_a_members_type_and_name_leaves_the_member_a_unit_of_its_class() -> None:
    found = units(CLI, "cpp")
    assert {"CLI.App.count", "CLI.App.parent", "CLI.App.basic_string_view", "CLI.App.plain_count"} <= set(found)
    assert found["CLI.App.count"].kind == "method"
    blanked, _ = blank_macros(CLI)
    assert "CLI11_NODISCARD" not in blanked and "FMT_CONSTEXPR20" not in blanked
    assert "FMT_CONSTEXPR basic_string_view" in blanked  # one name: read as its type, the constructor keeps its name
    for text in ("VALUE rb_call(int a);\n", "DWORD count = GET(x);\n", "FILE *open_log(void);\n"):
        assert blank_macros(text) == (text, frozenset())  # a type of its own, then the function


def test_c_attribute_macros_join_their_function_and_values_stay_as_written() -> None:
    found = units(REDIS, "c")
    assert found["redisPopcount"].text.startswith("ATTRIBUTE_TARGET_POPCNT\nlong long redisPopcount")
    assert "redisPopcount.if" not in found  # the statement macro no longer opens a "function"
    assert found["rb_call"].text.startswith("VALUE\nrb_call")
    blanked, lines = blank_macros(REDIS)
    assert lines == {11, 14}
    kept = {"NULL", "  STATE_LAST", "VALUE"}
    assert kept <= set(blanked.split("\n")) and len(blanked) == len(REDIS)


@pytest.mark.parametrize("text", [
    "int f(int a,\n#ifdef X\n      A_FLAG\n#else\n      B_FLAG\n#endif\n      );\n",
    "#define PICK(a, b) \\\n  (a > b ? a : \\\n   b)\nint x;\n",
    "int x =\n  MAXIMUM\n  ;\n",
])
def test_macros_inside_expressions_and_definitions_are_not_blanked(text: str) -> None:
    assert blank_macros(text) == (text, frozenset())


# googletest and doctest, cut down: warning macros whose bodies carry comments, an API macro
# before a class's attribute, a call continued over lines, a specifier before a macro, a macro
# after a parameter list, `__has_include(<…>)` in a directive
GTEST = """#if defined(__has_include) && __has_include(<version>)
#include <version>
#endif

#define SUPPRESS_COMMON_WARNINGS_PUSH                 \\
    MSVC_SUPPRESS_WARNING(4514) /* unreferenced */    \\
    /* these also disabled globally via cmake: */     \\
    MSVC_SUPPRESS_WARNING(4571) // SEH related

namespace testing {

DISABLE_MSC_WARNINGS_PUSH_(4251 \\
/* class A needs to have dll-interface to be used by clients of class B */)

class GTEST_API_ [[nodiscard]] AssertionResult {
 public:
  bool success() const { return success_; }

 private:
  bool success_;
};

struct Limits {
    static DOCTEST_CONSTEXPR size_type last = 24 - 1;
    static DOCTEST_CONSTEXPR bool value = true;
};

template <class T>
DOCTEST_CONSTEXPR_FUNC T &&forward(T &t) DOCTEST_NOEXCEPT {
    return static_cast<T &&>(t);
}

double twice(double x) DOCTEST_NOEXCEPT { return 2 * x; }

}  // namespace testing
"""


def test_comments_in_macro_bodies_api_macros_and_attributes_leave_the_classes_after_them_units() -> None:
    found = units(GTEST, "cpp")
    assert found["testing.AssertionResult"].kind == "class"
    assert found["testing.AssertionResult.success"].kind == "method"
    assert found["testing.Limits"].kind == "struct"
    assert found["testing.forward"].kind == "function" and found["testing.twice"].kind == "function"
    blanked, lines = blank_macros(GTEST)
    assert len(blanked) == len(GTEST) and blanked.count("\n") == GTEST.count("\n")
    assert lines == {12, 13}  # the call continued over two lines
    assert "/*" not in blanked.split("namespace")[0].split("#define")[1]  # the body's comments, closing `\` kept
    assert blanked.split("\n")[5].endswith("\\") and blanked.split("\n")[6].endswith("\\")
    for macro in ("GTEST_API_", "DOCTEST_CONSTEXPR ", "DOCTEST_NOEXCEPT", "DISABLE_MSC_WARNINGS_PUSH_"):
        assert macro not in blanked
    assert '__has_include("version")' in blanked


@pytest.mark.parametrize("text", [
    "void f(int x) {\n    if (x) FAIL;\n    while (x) CONTINUE;\n}\n",  # a statement macro after a condition
    "int x = f(\n    MAX(a,\n        b)\n  );\n",  # a call inside an argument list
    "void g(void) {\n    x = (uint32_t) UINT32_MAX;\n    y = (a) & MASK;\n}\n",  # a cast, an operand
    "#if (defined(META_CONCEPT) || META_TEMPLATES) && META_FOLD\n#endif\n",  # a directive's operand
])
def test_statement_and_argument_macros_stay(text: str) -> None:
    assert blank_macros(text) == (text, frozenset())
