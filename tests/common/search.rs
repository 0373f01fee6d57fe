//! FT.SEARCH helpers shared by the search tests.

use super::stm::{ok, text};
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;

/// The ids of an `FT.SEARCH … NOCONTENT` reply (RESP2: the total, then one id per document), in
/// reply order, checking that the total counts exactly them.
pub fn ids(reply: &Value) -> Vec<String> {
    let Value::Array(items) = reply else {
        panic!("not an array: {reply:?}")
    };
    let Some(Value::Int(total)) = items.first() else {
        panic!("no total: {reply:?}")
    };
    let ids: Vec<String> = items[1..].iter().map(text).collect();
    assert_eq!(*total as usize, ids.len(), "{reply:?}");
    ids
}

/// Runs `FT.SEARCH index query NOCONTENT [extra…]` and returns the ids in reply order.
pub async fn search(con: &mut Conn, index: &str, query: &str, extra: &[&str]) -> Vec<String> {
    let mut words = vec!["FT.SEARCH", index, query, "NOCONTENT"];
    words.extend_from_slice(extra);
    ids(&ok(con, &words).await)
}
