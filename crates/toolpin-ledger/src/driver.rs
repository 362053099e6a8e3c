//! What the store asks of a database, over the two thin drivers
//! ([`crate::sqlite`] on rusqlite, [`crate::postgres`] on the postgres
//! client): a transaction ([`Tx`]) that runs a statement written once
//! ([`crate::statements`], rendered for its [`Dialect`]) with arguments
//! ([`Arg`]) and hands back rows ([`Row`]); and why it failed ([`Fail`]).

use std::collections::HashMap;

use crate::dialect::Dialect;

/// A statement's argument. Typed even when NULL: PostgreSQL checks a
/// parameter's type against the value's.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg<'a> {
    Int(Option<i64>),
    Text(Option<&'a str>),
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}

impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(Some(v))
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(Some(v))
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Arg::Text(v)
    }
}

impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Arg::Text(v.as_deref())
    }
}

/// The arguments of a statement, each converted to an [`Arg`].
macro_rules! args {
    ($($value:expr),* $(,)?) => {
        &[$($crate::driver::Arg::from($value)),*]
    };
}
pub(crate) use args;

impl rusqlite::ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Arg::Int(v) => v.to_sql(),
            Arg::Text(v) => v.to_sql(),
        }
    }
}

impl Arg<'_> {
    fn postgres(&self) -> &(dyn postgres::types::ToSql + Sync) {
        match self {
            Arg::Int(v) => v,
            Arg::Text(v) => v,
        }
    }
}

/// Why a statement failed: the database said so, or a stored value is not
/// one this build knows.
#[derive(Debug)]
pub(crate) enum Fail {
    Sqlite(rusqlite::Error),
    Postgres(postgres::Error),
    Data(String),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Fail::Sqlite(e)
    }
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Self {
        Fail::Postgres(e)
    }
}

pub(crate) type Result<T, E = Fail> = std::result::Result<T, E>;

/// A value both drivers read from a column.
pub(crate) trait Column:
    rusqlite::types::FromSql + for<'a> postgres::types::FromSql<'a>
{
}

impl<T: rusqlite::types::FromSql + for<'a> postgres::types::FromSql<'a>> Column for T {}

/// One row of a result.
pub(crate) enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r postgres::Row),
}

impl Row<'_> {
    /// Column `i` (from 0).
    pub(crate) fn get<T: Column>(&self, i: usize) -> Result<T> {
        Ok(match self {
            Row::Sqlite(r) => r.get(i)?,
            Row::Postgres(r) => r.try_get(i)?,
        })
    }

    /// Column `i`, a text, borrowed from the row (no copy).
    pub(crate) fn str(&self, i: usize) -> Result<&str> {
        Ok(match self {
            Row::Sqlite(r) => r.get_ref(i)?.as_str().map_err(rusqlite::Error::from)?,
            Row::Postgres(r) => r.try_get(i)?,
        })
    }
}

/// The PostgreSQL statements prepared on a connection, by text: a batch
/// of thousands runs the same few, and preparing each time is a round
/// trip. Cleared when it grows past [`Cache::MAX`] (the history query's
/// filters make a few texts more).
#[derive(Default)]
pub(crate) struct Cache(HashMap<String, postgres::Statement>);

impl Cache {
    const MAX: usize = 128;
}

/// One transaction of either driver.
pub(crate) enum Tx<'c> {
    Sqlite(SqliteTx<'c>),
    Postgres(postgres::Transaction<'c>, &'c mut Cache),
}

/// A SQLite transaction and the statements it prepared: a batch of
/// thousands runs the same few texts, and parsing them for each sighting
/// was most of its cost.
pub(crate) struct SqliteTx<'c> {
    /// First, so that the statements are finalized before the transaction
    /// ends, either way.
    prepared: HashMap<String, rusqlite::Statement<'c>>,
    tx: rusqlite::Transaction<'c>,
    conn: &'c rusqlite::Connection,
}

impl<'c> SqliteTx<'c> {
    pub(crate) fn begin(
        conn: &'c rusqlite::Connection,
        behavior: rusqlite::TransactionBehavior,
    ) -> Result<Self> {
        Ok(Self {
            prepared: HashMap::new(),
            tx: rusqlite::Transaction::new_unchecked(conn, behavior)?,
            conn,
        })
    }

    /// Commits, the prepared statements finalized first.
    pub(crate) fn commit(self) -> Result<()> {
        drop(self.prepared);
        Ok(self.tx.commit()?)
    }

    fn statement(&mut self, sql: &str) -> Result<&mut rusqlite::Statement<'c>> {
        if !self.prepared.contains_key(sql) {
            let stmt = self.conn.prepare(sql)?;
            self.prepared.insert(sql.to_string(), stmt);
        }
        self.prepared
            .get_mut(sql)
            .ok_or_else(|| Fail::Data(format!("statement not prepared: {sql}")))
    }
}

impl Tx<'_> {
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Tx::Sqlite(_) => Dialect::Sqlite,
            Tx::Postgres(..) => Dialect::Postgres,
        }
    }

    /// Runs `sql` for each row, handing it to `each`.
    pub(crate) fn each(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        mut each: impl FnMut(&Row<'_>) -> Result<()>,
    ) -> Result<()> {
        let dialect = self.dialect();
        let sql = dialect.render(sql);
        match self {
            Tx::Sqlite(tx) => {
                let stmt = tx.statement(&sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(args))?;
                while let Some(r) = rows.next()? {
                    each(&Row::Sqlite(r))?;
                }
            }
            Tx::Postgres(tx, cache) => {
                let stmt = prepared(tx, cache, &sql)?;
                let args: Vec<_> = args.iter().map(Arg::postgres).collect();
                for r in tx.query(&stmt, &args)? {
                    each(&Row::Postgres(&r))?;
                }
            }
        }
        Ok(())
    }

    /// Runs `sql`, each row read by `read`.
    pub(crate) fn rows<T>(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        mut read: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.each(sql, args, |r| {
            out.push(read(r)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The first row of `sql`, read by `read`, if any.
    pub(crate) fn row<T>(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        read: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut read = Some(read);
        let mut out = None;
        self.each(sql, args, |r| {
            if let Some(read) = read.take() {
                out = Some(read(r)?);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Runs `sql`; how many rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64> {
        let dialect = self.dialect();
        let sql = dialect.render(sql);
        Ok(match self {
            Tx::Sqlite(tx) => tx
                .statement(&sql)?
                .execute(rusqlite::params_from_iter(args))? as u64,
            Tx::Postgres(tx, cache) => {
                let stmt = prepared(tx, cache, &sql)?;
                let args: Vec<_> = args.iter().map(Arg::postgres).collect();
                tx.execute(&stmt, &args)?
            }
        })
    }

    /// Prepares `sql` without running it: whether the database reads it.
    pub(crate) fn prepare(&mut self, sql: &str) -> Result<()> {
        let dialect = self.dialect();
        let sql = dialect.render(sql);
        match self {
            Tx::Sqlite(tx) => {
                tx.statement(&sql)?;
            }
            Tx::Postgres(tx, cache) => {
                prepared(tx, cache, &sql)?;
            }
        }
        Ok(())
    }

    /// Runs statements with no arguments (a migration's schema text).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Tx::Sqlite(tx) => tx.conn.execute_batch(sql)?,
            Tx::Postgres(tx, _) => tx.batch_execute(sql)?,
        }
        Ok(())
    }
}

fn prepared(
    tx: &mut postgres::Transaction<'_>,
    cache: &mut Cache,
    sql: &str,
) -> Result<postgres::Statement> {
    if let Some(stmt) = cache.0.get(sql) {
        return Ok(stmt.clone());
    }
    let stmt = tx.prepare(sql)?;
    if cache.0.len() >= Cache::MAX {
        cache.0.clear();
    }
    cache.0.insert(sql.to_string(), stmt.clone());
    Ok(stmt)
}

/// Text in one line: runs of whitespace (newlines too) as one space.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
