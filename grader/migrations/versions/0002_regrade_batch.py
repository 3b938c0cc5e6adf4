"""regrade batches

Revision ID: 7c1e5a90b2d4
Revises: 06b3ad234546
Create Date: 2026-11-30 10:00:00.000000

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "7c1e5a90b2d4"
down_revision = "06b3ad234546"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "regrade_batch",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("requested_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("submission_ids", sa.JSON(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("note", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(["assignment_id"], ["assignment.id"],
                                name=op.f("fk_regrade_batch_assignment_id_assignment"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["requested_by"], ["users.id"],
                                name=op.f("fk_regrade_batch_requested_by_users"),
                                ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_regrade_batch")),
    )
    with op.batch_alter_table("regrade_batch", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_regrade_batch_assignment_id"), ["assignment_id"],
                              unique=False)


def downgrade():
    with op.batch_alter_table("regrade_batch", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_regrade_batch_assignment_id"))
    op.drop_table("regrade_batch")
