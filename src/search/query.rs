//! The query language of `FT.SEARCH` and `FT.AGGREGATE` (RediSearch's, dialect 2 and what 3 and 4
//! change), parsed into a [`Query`] tree that names fields but knows no index. `$name` parameters
//! (`PARAMS`) are substituted while parsing, so the tree holds only literal values.

/// A whole query: the documents [`Query::filter`] selects, and when it ends in
/// `=>[KNN k @field $blob]`, the `k` nearest of them by that vector field.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub filter: Node,
    pub knn: Option<Knn>,
}

/// One node of the tree. Text nodes ([`Node::Term`] … [`Node::Phrase`]) match in every TEXT field
/// unless a [`Node::Fields`] above them narrows the fields.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `*`: every document of the index.
    All,
    /// Space-separated nodes: a document matches all of them.
    And(Vec<Node>),
    /// `a | b`: a document matches any of them.
    Or(Vec<Node>),
    /// `-node`: documents that do not match.
    Not(Box<Node>),
    /// `~node`: does not narrow the result; matching documents score higher.
    Optional(Box<Node>),
    /// `@title:node` or `@title|body:node`: the text nodes below match only in these fields.
    Fields {
        fields: Vec<String>,
        node: Box<Node>,
    },
    /// A word, unescaped, as written (the executor folds case and stems it).
    Term(String),
    /// `foo*`
    Prefix(String),
    /// `*foo`
    Suffix(String),
    /// `*foo*`
    Contains(String),
    /// `%foo%` (distance 1), `%%foo%%` (2), `%%%foo%%%` (3).
    Fuzzy { term: String, distance: u8 },
    /// `"a b c"`: the words next to each other, in order (`slop`/`inorder` attributes relax it).
    Phrase {
        terms: Vec<String>,
        slop: Option<u32>,
        in_order: bool,
    },
    /// `@field:{a | b* | *c | *d*}`: any of the values, compared as the field's SEPARATOR and
    /// CASESENSITIVE options say.
    Tag {
        field: String,
        values: Vec<TagValue>,
    },
    /// `@field:[min max]`, `(` before a bound excludes it, `-inf`/`+inf` allowed; dialect 2's
    /// `@field:[v]` and dialect 4's `@field==v` are `min == max`, both inclusive.
    Numeric {
        field: String,
        min: Bound,
        max: Bound,
    },
    /// `@field:[lon lat radius unit]`, radius in metres after the unit is applied.
    Geo {
        field: String,
        lon: f64,
        lat: f64,
        radius_m: f64,
    },
    /// `@field:[VECTOR_RANGE radius $blob]=>{$YIELD_DISTANCE_AS: name}`.
    VectorRange {
        field: String,
        radius: f64,
        vector: Vec<u8>,
        distance_as: Option<String>,
    },
    /// `ismissing(@field)` (indexes created with INDEXMISSING).
    Missing(String),
    /// `@field:""` or `@field:{""}` (INDEXEMPTY).
    EmptyValue(String),
}

/// One value of a tag set.
#[derive(Debug, Clone, PartialEq)]
pub enum TagValue {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(String),
}

/// One end of a numeric range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub value: f64,
    pub inclusive: bool,
}

/// `=>[KNN k @field $blob EF_RUNTIME n AS name]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Knn {
    pub k: usize,
    pub field: String,
    pub vector: Vec<u8>,
    pub ef_runtime: Option<usize>,
    /// The name the distance is returned under (RediSearch's default is `__<field>_score`).
    pub score_as: Option<String>,
}
