//! Byte-exact comparison with replies recorded from a real redis-server 7.0.15: every list, hash,
//! set and sorted-set edge case in `types_support/redis_replies.rs`, in RESP2 and RESP3.

use crate::common;
use crate::types_support;

use common::TestServer;
use types_support::redis_replies::{HASHES_AND_SETS, LISTS, RESP3, SORTED_SETS};
use types_support::{raw3, run_table};

#[tokio::test]
async fn list_commands_answer_like_redis() {
    let server = TestServer::start().await;
    run_table(&mut server.raw().await, LISTS).await;
}

#[tokio::test]
async fn hash_and_set_commands_answer_like_redis() {
    let server = TestServer::start().await;
    run_table(&mut server.raw().await, HASHES_AND_SETS).await;
}

#[tokio::test]
async fn sorted_set_commands_answer_like_redis() {
    let server = TestServer::start().await;
    run_table(&mut server.raw().await, SORTED_SETS).await;
}

#[tokio::test]
async fn resp3_reply_shapes_match_redis() {
    let server = TestServer::start().await;
    run_table(&mut raw3(&server).await, RESP3).await;
}
