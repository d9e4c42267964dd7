def test_it_lists_the_callers_license(owner):
    response = owner.client.get("/v1/licenses")
    assert response.status_code == 200
    assert [item["ID"] for item in response.json()] == [owner.license.pk]
