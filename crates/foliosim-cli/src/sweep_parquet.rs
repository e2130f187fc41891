//! A sweep's table as Parquet, through the parquet crate's column writer
//! (no Arrow: one flat schema of required columns is all a sweep needs).
//! Column types: point, repeat, seed and the counters INT64; elapsed_s
//! DOUBLE; a parameter INT64 where every point gives it an integer, a
//! UTF-8 string otherwise.

use std::sync::Arc;

use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::errors::Result;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

#[derive(Clone, Copy)]
enum Col {
    Int,
    Double,
    Text,
}

/// `rows` (all of `header`'s columns, as the CSV writes them) encoded as
/// one Parquet file; the `nparams` columns after point/repeat/seed are
/// the parameters, `int_params` tells which are integers.
pub fn encode(
    header: &[String],
    rows: &[Vec<String>],
    nparams: usize,
    int_params: &[bool],
) -> Result<Vec<u8>> {
    let kinds: Vec<Col> = header
        .iter()
        .enumerate()
        .map(|(i, name)| match i {
            _ if (3..3 + nparams).contains(&i) => {
                if int_params[i - 3] {
                    Col::Int
                } else {
                    Col::Text
                }
            }
            _ if name == "elapsed_s" => Col::Double,
            _ => Col::Int,
        })
        .collect();
    let mut fields = Vec::new();
    for (name, kind) in header.iter().zip(&kinds) {
        let t = match kind {
            Col::Int => Type::primitive_type_builder(name, PhysicalType::INT64),
            Col::Double => Type::primitive_type_builder(name, PhysicalType::DOUBLE),
            Col::Text => Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
                .with_logical_type(Some(LogicalType::String)),
        };
        fields.push(Arc::new(t.with_repetition(Repetition::REQUIRED).build()?));
    }
    let schema = Arc::new(
        Type::group_type_builder("foliosim_sweep")
            .with_fields(fields)
            .build()?,
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_created_by("foliosim".into())
            .build(),
    );
    let mut out = Vec::new();
    let mut w = SerializedFileWriter::new(&mut out, schema, props)?;
    let mut rg = w.next_row_group()?;
    let mut i = 0;
    while let Some(mut col) = rg.next_column()? {
        let bad = |v: &str| {
            parquet::errors::ParquetError::General(format!(
                "column {}: '{v}' is not a number",
                header[i]
            ))
        };
        match kinds[i] {
            Col::Int => {
                let vals = rows
                    .iter()
                    .map(|r| r[i].parse::<i64>().map_err(|_| bad(&r[i])))
                    .collect::<Result<Vec<_>>>()?;
                col.typed::<Int64Type>().write_batch(&vals, None, None)?;
            }
            Col::Double => {
                let vals = rows
                    .iter()
                    .map(|r| r[i].parse::<f64>().map_err(|_| bad(&r[i])))
                    .collect::<Result<Vec<_>>>()?;
                col.typed::<DoubleType>().write_batch(&vals, None, None)?;
            }
            Col::Text => {
                let vals: Vec<ByteArray> = rows
                    .iter()
                    .map(|r| ByteArray::from(r[i].as_str()))
                    .collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&vals, None, None)?;
            }
        }
        col.close()?;
        i += 1;
    }
    rg.close()?;
    w.close()?;
    Ok(out)
}
