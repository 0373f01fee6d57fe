//! `FT.AGGREGATE`'s pipeline: the arguments after the query parsed into a [`Plan`], and the plan
//! run over the rows the query selected. Knows no index: the caller loads each row's fields.

use bytes::Bytes;

/// One row: property name → value, in the order they were loaded or made.
pub type Row = Vec<(String, Value)>;

/// A property's value inside the pipeline.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Number(f64),
    Text(Bytes),
    /// TOLIST's result.
    List(Vec<Value>),
}

/// Which fields each row starts with.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// None but those a step names (and the key, under `__key`, when a step names it).
    Named,
    /// `LOAD *`: every field of the document.
    All,
    /// `LOAD n @a @b AS c …`: (field or JSONPath, the name it gets).
    Fields(Vec<(String, String)>),
}

/// `WITHCURSOR [COUNT n] [MAXIDLE ms]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CursorOptions {
    pub count: usize,
    pub max_idle_ms: u64,
}
