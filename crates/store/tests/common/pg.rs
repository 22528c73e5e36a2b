//! A fresh PostgreSQL database per test, on the cluster `scripts/services/postgres.sh` started
//! (`SERVEBENCH_PG_URL`); skipped (or failed under `SERVEBENCH_REQUIRE_SERVICES=1`) without it.
#![allow(dead_code)]

/// The service URL, or `None` after `skip_or_fail`.
pub fn service_url() -> Option<String> {
    let url = std::env::var("SERVEBENCH_PG_URL")
        .ok()
        .filter(|u| !u.is_empty());
    servebench_testkit::require(
        url,
        "no PostgreSQL: SERVEBENCH_PG_URL is not set (eval \"$(bash scripts/services/postgres.sh)\")",
    )
}

/// Runs SQL statements on the service database (as the service role).
pub fn admin_sql(url: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let h = tokio::spawn(conn);
        client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        drop(client);
        let _ = h.await;
    });
}

/// One value of a query (first column, first row) as text.
pub fn query_text(url: &str, sql: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        let h = tokio::spawn(conn);
        let row = client
            .query_one(sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        let v: String = row.get(0);
        drop(client);
        let _ = h.await;
        v
    })
}

/// `url` with its database replaced by `db`.
pub fn with_db(url: &str, db: &str) -> String {
    let cut = url.rfind('/').expect("a database in the URL");
    format!("{}/{db}", &url[..cut])
}

/// A new empty database `name` (dropped first if a former run left it); its URL.
pub fn fresh_db(name: &str) -> Option<String> {
    let url = service_url()?;
    admin_sql(
        &url,
        &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
    );
    admin_sql(&url, &format!("CREATE DATABASE {name}"));
    Some(with_db(&url, name))
}
